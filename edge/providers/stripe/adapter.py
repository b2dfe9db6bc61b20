"""Stripe: card payments and subscriptions through hosted Checkout, webhooks, billing portal.

The checkout is a Checkout Session (``POST /v1/checkout/sessions``). The node's transaction id
travels as ``client_reference_id`` and in ``metadata`` of the session and of the payment intent
or subscription it creates, so every later event (refunds, renewals, invoices) names it
(CONTRACT 4.2). Signatures: ``signature``; event mapping: ``events``; amounts: ``money``
(Stripe's minor units, converted both ways); calls: ``api``.

Money the node moves and what it learns by asking (CONTRACT 4.3a): ``refunds`` (a refund made
once, whatever answers are lost: ``Idempotency-Key`` = the node's refund id, kept by Stripe for
24 hours, ``refund_key_s``) and ``sync`` (the transaction's objects read back as the events
their webhooks would have given; Stripe's event list for ``edge reconcile``).

The secret key goes only into the ``Authorization`` header: error messages never contain it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from edge.errors import Conflict
from edge.providers import answers
from edge.providers.base import (
    CheckoutRequest,
    CheckoutResult,
    CredentialField,
    PortalRequest,
    PortalResult,
    PriceProblem,
    Provider,
)
from edge.providers.stripe import api, checking, events, money, refunds, signature, sync


@dataclass(frozen=True)
class StripeProvider(Provider):
    def price_problem(self, amount_minor: int, currency: str, name: str) -> PriceProblem | None:
        rule = money.charge_problem(amount_minor, currency)
        return PriceProblem("amount", rule) if rule else None

    async def create_checkout(self, request: CheckoutRequest) -> CheckoutResult:
        tx, credentials = request.tx, request.credentials
        session = await api.post(
            request.http,
            credentials,
            "/v1/checkout/sessions",
            checkout_params(request),
            idempotency_key=tx["id"],
        )
        made = answers.read(api.API, session, api.CheckoutSession)
        return CheckoutResult(
            fields={"url": made.url},
            provider_ref=made.id,
            expires_at_ms=made.expires_at * 1000 if made.expires_at is not None else None,
        )

    async def portal_url(self, request: PortalRequest) -> PortalResult:
        customer = request.subscription.get("providerCustomer")
        if not customer:
            raise Conflict(
                "portal_unsupported", "This subscription has no Stripe customer on record."
            )
        session = await api.post(
            request.http,
            request.credentials,
            "/v1/billing_portal/sessions",
            {"customer": customer, "return_url": request.return_url},
        )
        return PortalResult(url=answers.read(api.API, session, api.PortalSession).url)


def checkout_params(request: CheckoutRequest) -> dict[str, Any]:
    """The Checkout Session parameters for a pending transaction (before form encoding)."""
    tx = request.tx
    subscription = tx["kind"] == "subscription"
    currency = str(tx["currency"]).upper()
    total = money.to_stripe(int(tx["amount"]), currency)
    rule = money.charge_problem(int(tx["amount"]), currency)
    if total is None or rule is not None:
        raise Conflict("amount_not_supported", f"{rule}.", field="amount")
    quantity = int(tx.get("quantity") or 1)
    unit_amount, rest = divmod(total, quantity)
    if rest:  # an amount that does not split evenly is charged as one line of the total
        unit_amount, quantity = total, 1
    price_data: dict[str, Any] = {
        "currency": currency.lower(),
        "unit_amount": unit_amount,
        "product_data": {"name": request.product["name"]},
    }
    if subscription:
        price_data["recurring"] = {"interval": tx["interval"]}
    metadata = {**(tx.get("metadata") or {}), "txId": tx["id"]}
    if tx.get("customerRef"):
        metadata["customerRef"] = tx["customerRef"]
    return {
        "mode": "subscription" if subscription else "payment",
        "line_items": [{"price_data": price_data, "quantity": quantity}],
        "success_url": request.success_url,
        "cancel_url": request.cancel_url,
        "client_reference_id": tx["id"],
        "metadata": metadata,
        # The session's metadata stays on the session: copy it to the object that later
        # events are about, so refunds, disputes, renewals and invoices carry the txId too.
        ("subscription_data" if subscription else "payment_intent_data"): {"metadata": metadata},
    }


STRIPE = StripeProvider(
    name="stripe",
    display_name="Stripe",
    kind="card",
    checkout_type="redirect",
    default_label="Card",
    credential_fields=(
        CredentialField(
            "secretKey",
            secret=True,
            kinds=("stripe_secret_key", "stripe_restricted_key"),
            strict=True,
        ),
        CredentialField("publishableKey", kinds=("stripe_publishable_key",), strict=True),
        CredentialField(
            "webhookSecret", secret=True, kinds=("webhook_signing_secret",), strict=True
        ),
        CredentialField(
            "previousWebhookSecret",
            secret=True,
            required=False,
            kinds=("webhook_signing_secret",),
            strict=True,
        ),
        CredentialField("apiBase", required=False, shape="url"),
    ),
    publishable_field="publishableKey",
    webhook=signature.WEBHOOK,
    refunds=True,
    read_event=events.normalize,
    send_refund=refunds.send_refund,
    refunds_of=refunds.refunds_of,
    refund_key_s=refunds.REFUND_KEY_S,
    sync=sync.sync,
    list_events=sync.list_events,
    walks_cover_checkouts=True,
    check_credentials=checking.check_credentials,
)
