"""PayPal: the online wallet. Orders v2 with a capture the node owes after approval,
Subscriptions v1, webhooks signed with PayPal's certificate (CONTRACT 4.2, 4.3).

- Checkout (payment): an order with ``intent: CAPTURE``, ``custom_id`` and ``invoice_id`` = the
  transaction id, ``PayPal-Request-Id`` = the transaction id (a retried call makes no second
  order), the node's return address as ``return_url`` and its cancel address as ``cancel_url``
  (the node tells the buyer what happened either way). The buyer approves at the ``payer-action``
  address; the answer is ``type: approval`` and the checkout lapses after 3 hours (PayPal sends
  nothing for an order never approved, so the node expires it itself).
- Capture: a durable follow-up owed on the buyer's return or ``CHECKOUT.ORDER.APPROVED``,
  whichever comes first (``PayPal-Request-Id`` = ``{txId}-capture``, so both are one capture;
  never the order's own request id, which PayPal would answer with the stored create).
  ``ORDER_ALREADY_CAPTURED`` reads the order and counts as done; ``INSTRUMENT_DECLINED`` is an
  attempt that failed (the buyer may pick another funding source: the status stays pending);
  ``ORDER_NOT_APPROVED`` is tried again with backoff, until the checkout expires.
- Checkout (subscription): a catalog product and a plan for the product's price, made on first
  use and remembered by the node; then a subscription with ``custom_id`` = the transaction id,
  answered with its ``approve`` address.
- Refunds, exactly once: ``refunds`` (``PayPal-Request-Id`` = the node's refund id, kept 45
  days by PayPal; ``custom_id`` the tag; ``note_to_payer`` one line of at most 255 characters).
- Asking PayPal: ``sync`` (the order or subscription, its refunds and disputes, as the events
  their webhooks would have given) and ``list_events`` (PayPal's list of webhook events).
- Webhooks: ``signature`` (the scheme) and ``certs`` (which certificates may be fetched).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from edge.errors import Conflict
from edge.providers import answers, calls
from edge.providers.base import (
    CheckoutRequest,
    CheckoutResult,
    CredentialField,
    Delivery,
    FollowUp,
    FollowUpRequest,
    FollowUpResult,
    NormalizedEvent,
    PriceProblem,
    Provider,
    SignatureInvalid,
)
from edge.providers.paypal import api, certs, checking, events, money, refunds, signature, sync
from edge.providers.verifying import Signed, WebhookScheme

CHECKOUT_LIFETIME_MS = 3 * 3600 * 1000
INTERVALS = {"day": "DAY", "week": "WEEK", "month": "MONTH", "year": "YEAR"}
MAX_TEXT = 127  # PayPal's limit on description, custom_id, invoice_id and names


@dataclass(frozen=True)
class PayPalProvider(Provider):
    def refund_reason_problem(self, reason: str) -> str | None:
        return refunds.reason_problem(reason)

    def price_problem(self, amount_minor: int, currency: str, name: str) -> PriceProblem | None:
        if currency not in money.CURRENCIES:
            return PriceProblem("currency", f"PayPal does not take {currency}")
        if money.to_paypal(amount_minor, currency) is None:
            return PriceProblem(
                "amount", f"PayPal charges {currency} in whole units: the amount has a fraction"
            )
        return None

    async def create_checkout(self, request: CheckoutRequest) -> CheckoutResult:
        tx = request.tx
        value = money.to_paypal(int(tx["amount"]), str(tx["currency"]))
        if value is None:
            raise Conflict(
                "amount_not_supported",
                f"PayPal does not charge this amount in {tx['currency']}"
                " (a currency it does not take, or a fraction it has no decimals for).",
                field="amount",
            )
        expires_at = int(tx["createdAt"]) + CHECKOUT_LIFETIME_MS
        if tx["kind"] == "subscription":
            return await _subscribe(request, value, expires_at)
        answer = await api.call(
            request.http,
            request.credentials,
            tx["isTest"],
            "POST",
            "/v2/checkout/orders",
            order_body(request, value),
            request_id=tx["id"],
        )
        if not answer.ok:
            raise api.refused(answer, request.credentials)
        order = answers.read(api.API, answer.body, api.Order)
        return CheckoutResult(
            fields={"url": order.approve}, provider_ref=order.id, expires_at_ms=expires_at
        )

    def returned(self, tx: Mapping[str, Any], query: Mapping[str, str]) -> tuple[FollowUp, ...]:
        # the order is the one the node made: never one named in the buyer's query string
        if tx["kind"] != "payment" or not tx.get("providerRef"):
            return ()
        return (FollowUp(events.CAPTURE, {"orderId": tx["providerRef"]}),)


async def certificate_signer(scheme: WebhookScheme, signed: Signed, delivery: Delivery) -> str:
    """The mode whose ``webhookId`` the delivery was signed for, with a certificate from one of
    that mode's ``certHosts``: PayPal's own step in the shared composition, in place of an HMAC
    secret."""
    cert_url = signed.values[signature.CERT_URL]
    hosts_checked = False
    for mode, plain in delivery.credentials.items():
        hosts = plain.get("certHosts") or certs.default_hosts(mode == "test")
        if not certs.host_allowed(cert_url, hosts):
            continue
        hosts_checked = True
        key = await certs.public_key(delivery.http, cert_url)
        webhook_id = str(plain[scheme.secrets[0]])
        if key is not None and signature.signature_matches(
            key, signed.values, delivery.body, webhook_id
        ):
            return mode
    raise SignatureInvalid(
        "no_matching_signature",
        "The signature does not match this project's PayPal webhook id."
        if hosts_checked
        else "PAYPAL-CERT-URL is not on a certificate host of this project's PayPal settings.",
    )


# The delivery is signed for the merchant's subscription (``webhookId``, never read from the
# delivery) with the key of a certificate PayPal names. No timestamp window: PayPal's retries
# resend the first signature, and the event id deduplicates a replay.
WEBHOOK = WebhookScheme(
    "PAYPAL-TRANSMISSION-SIG",
    signature.read,
    secrets=("webhookId",),
    window_s=None,
    signer=certificate_signer,
)


async def capture(request: FollowUpRequest) -> FollowUpResult:
    """Capture an approved order, once whatever the number of attempts."""
    tx, credentials = request.tx, request.credentials
    order_id = str(request.follow_up.params.get("orderId") or "")
    if not order_id or order_id != tx.get("providerRef"):
        return FollowUpResult(detail="not this transaction's order: nothing captured")
    path = f"/v2/checkout/orders/{order_id}"
    # a key of its own: PayPal keeps a request id across calls, and the create's id would
    # answer the capture with the stored create (CONTRACT 4.3)
    answer = await api.call(
        request.http, credentials, tx["isTest"], "POST", path + "/capture", {}, capture_key(tx)
    )
    issues = api.issues(answer.body)
    if not answer.ok and "ORDER_ALREADY_CAPTURED" in issues:
        answer = await api.call(request.http, credentials, tx["isTest"], "GET", path)
    elif answer.status == 422 and "INSTRUMENT_DECLINED" in issues:
        declined = NormalizedEvent(
            provider_event_id=f"declined:{order_id}:{answer.body.get('debug_id') or tx['id']}",
            type=events.E.PAYMENT_ATTEMPT_FAILED,
            provider_type="capture answer INSTRUMENT_DECLINED",
            tx_id=tx["id"],
            refs=(order_id,),
        )
        return FollowUpResult(
            detail="declined: the buyer's funding source was refused; they may choose another",
            events=(declined,),
            body=answer.raw,
        )
    elif answer.status == 422 and "DUPLICATE_INVOICE_ID" in issues:
        # another order of the account already carries this checkout's invoice id (a buyer can
        # make one in the browser): PayPal will never capture this one, so the merchant is told
        refused = NormalizedEvent(
            provider_event_id=f"refused:{order_id}:DUPLICATE_INVOICE_ID",
            type=events.E.PAYMENT_ATTEMPT_FAILED,
            provider_type="capture answer DUPLICATE_INVOICE_ID",
            refs=(order_id,),
            attention="capture_refused",
        )
        return FollowUpResult(
            detail="refused: another order already carries this checkout's invoice id",
            events=(refused,),
            body=answer.raw,
        )
    elif answer.status == 422 and "ORDER_NOT_APPROVED" in issues:
        raise calls.provider_error("The buyer has not approved the order yet.")
    if not answer.ok:
        raise api.refused(answer, credentials)
    outcome = events.capture_event(answer.body)
    if outcome is None:
        raise answers.without(api.API, "the capture it made")
    return FollowUpResult(
        detail=f"captured: {outcome.provider_type.rsplit(' ', 1)[-1]}",
        events=(outcome,),
        body=answer.raw,
    )


def capture_key(tx: Mapping[str, Any]) -> str:
    """The ``PayPal-Request-Id`` of an order's capture (at most 108 characters: a tx id is 29)."""
    return f"{tx['id']}-capture"


def order_body(request: CheckoutRequest, value: str) -> dict[str, Any]:
    """The ``POST /v2/checkout/orders`` body for a pending payment."""
    tx = request.tx
    return {
        "intent": "CAPTURE",
        "purchase_units": [
            {
                "reference_id": "default",
                "custom_id": tx["id"],
                "invoice_id": tx["id"],
                "description": str(request.product["name"])[:MAX_TEXT],
                "amount": {"currency_code": tx["currency"], "value": value},
            }
        ],
        "payment_source": {
            "paypal": {
                "experience_context": {
                    "return_url": request.return_url,
                    "cancel_url": request.cancel_return_url or request.cancel_url,
                    "user_action": "PAY_NOW",
                    "shipping_preference": "NO_SHIPPING",
                }
            }
        },
    }


async def _subscribe(request: CheckoutRequest, value: str, expires_at: int) -> CheckoutResult:
    tx = request.tx
    plan_id, made = request.remembered, None
    if plan_id is None:
        plan_id = made = await _make_plan(request, value)
    answer = await api.call(
        request.http,
        request.credentials,
        tx["isTest"],
        "POST",
        "/v1/billing/subscriptions",
        {
            "plan_id": plan_id,
            "custom_id": tx["id"],
            "application_context": {
                "return_url": request.return_url,
                "cancel_url": request.cancel_return_url or request.cancel_url,
                "user_action": "SUBSCRIBE_NOW",
                "shipping_preference": "NO_SHIPPING",
            },
        },
        request_id=tx["id"],
    )
    if not answer.ok:
        raise api.refused(answer, request.credentials)
    subscription = answers.read(api.API, answer.body, api.Subscription)
    return CheckoutResult(
        fields={"url": subscription.approve},
        provider_ref=subscription.id,
        expires_at_ms=expires_at,
        remember=made,
    )


async def _make_plan(request: CheckoutRequest, value: str) -> str:
    """A catalog product and a monthly (or the product's interval) plan at this price."""
    tx, http, credentials = request.tx, request.http, request.credentials
    name = str(request.product["name"])[:MAX_TEXT]
    product = await api.call(
        http,
        credentials,
        tx["isTest"],
        "POST",
        "/v1/catalogs/products",
        {"name": name, "type": "SERVICE"},
        request_id=f"{tx['id']}-product",
    )
    if not product.ok:
        raise api.refused(product, credentials)
    product_id = answers.read(api.API, product.body, api.CatalogProduct).id
    plan = await api.call(
        http,
        credentials,
        tx["isTest"],
        "POST",
        "/v1/billing/plans",
        {
            "product_id": product_id,
            "name": name,
            "status": "ACTIVE",
            "billing_cycles": [
                {
                    "frequency": {
                        "interval_unit": INTERVALS[str(tx["interval"])],
                        "interval_count": 1,
                    },
                    "tenure_type": "REGULAR",
                    "sequence": 1,
                    "total_cycles": 0,
                    "pricing_scheme": {
                        "fixed_price": {"currency_code": tx["currency"], "value": value}
                    },
                }
            ],
            "payment_preferences": {"auto_bill_outstanding": True, "payment_failure_threshold": 3},
        },
        request_id=f"{tx['id']}-plan",
    )
    if not plan.ok:
        raise api.refused(plan, credentials)
    return answers.read(api.API, plan.body, api.BillingPlan).id


PAYPAL = PayPalProvider(
    name="paypal",
    display_name="PayPal",
    kind="wallet",
    checkout_type="approval",
    default_label="PayPal",
    credential_fields=(
        CredentialField("clientId"),
        CredentialField("clientSecret", secret=True),
        CredentialField(
            "webhookId",
            pattern=r"[A-Za-z0-9][A-Za-z0-9_-]{0,127}",
            rule="a PayPal webhook id is letters, digits, - and _ (as the dashboard shows it)",
        ),
        CredentialField("apiBase", required=False, shape="url"),
        CredentialField("certHosts", required=False, shape="hosts"),
    ),
    webhook=WEBHOOK,
    expires_checkouts=False,
    returns_through_node=True,
    refunds=True,
    read_event=events.normalize,
    follow_ups={events.CAPTURE: capture},
    send_refund=refunds.send_refund,
    refunds_of=refunds.refunds_of,
    refund_key_s=refunds.KEY_KEPT_S,
    sync=sync.sync,
    list_events=sync.list_events,
    walks_cover_checkouts=True,
    check_credentials=checking.check_credentials,
)
