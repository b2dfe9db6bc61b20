"""Paddle Billing: card payments and subscriptions through Paddle.js's overlay checkout,
signed webhooks, the customer portal (CONTRACT 4.2, 4.3, 4.4).

- Checkout: a transaction with a non-catalog price (``POST /transactions``), the node's
  transaction id, customerRef and metadata in ``custom_data``, which Paddle copies to the
  subscription and to every renewal. The answer is ``type: token``: the ``txn_`` id, which the
  browser hands to ``Paddle.Checkout.open({transactionId})`` after
  ``Paddle.Initialize({token: clientToken})``. Paddle's transactions do not lapse on a clock
  the node is told, so ``expiresAt`` is null.
- Webhooks: ``signature`` (the ``Paddle-Signature`` scheme; Paddle signs every attempt afresh,
  so the timestamp window applies) and ``events`` (the table).
- Portal: a customer portal session for the subscription's Paddle customer.

The API key goes only into the ``Authorization`` header: error messages never contain it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from edge.errors import Conflict
from edge.providers import calls
from edge.providers.base import (
    REFUND,
    CheckoutRequest,
    CheckoutResult,
    CredentialField,
    Delivery,
    FollowUpRequest,
    FollowUpResult,
    PortalRequest,
    PortalResult,
    PriceProblem,
    Provider,
)
from edge.providers.paddle import events, money, signature
from edge.providers.signing import signing_mode
from edge.providers.timestamped import check_timestamp

LIVE_API_BASE = "https://api.paddle.com"
SANDBOX_API_BASE = "https://sandbox-api.paddle.com"  # the default for test mode
API_VERSION = "1"
SIGNATURE_HEADER = "paddle-signature"
MAX_NAME = 200  # what the node sends as a price or product name
# a non-catalog price's ``description`` is 2 to 500 characters (openapi.yaml,
# transaction-price-create-base): the node sends the product's name there
MIN_NAME = 2


@dataclass(frozen=True)
class PaddleProvider(Provider):
    def price_problem(self, amount_minor: int, currency: str, name: str) -> PriceProblem | None:
        if money.to_paddle(amount_minor, currency) is None:
            return PriceProblem("currency", f"Paddle does not take {currency}")
        if len(name.strip()) < MIN_NAME:
            return PriceProblem(
                "name", f"Paddle needs a name of {MIN_NAME} characters or more for a price"
            )
        return None

    async def create_checkout(self, request: CheckoutRequest) -> CheckoutResult:
        answer = await _call(
            request.http,
            request.credentials,
            bool(request.tx["isTest"]),
            "/transactions",
            checkout_body(request),
        )
        txn = answer.get("id")
        if not isinstance(txn, str) or not txn.startswith("txn_"):
            raise calls.provider_error("Paddle answered without a transaction id.")
        return CheckoutResult(
            fields={"token": txn, "publishableKey": request.credentials["clientToken"]},
            provider_ref=txn,
            expires_at_ms=None,
        )

    async def verify_webhook(self, delivery: Delivery) -> str:
        """The mode whose webhook secret signed the body (any of the header's ``h1``: Paddle
        sends one per secret while a destination's secret rotates). A genuine but stale
        signature is timestamp_out_of_tolerance."""
        timestamp, signatures = signature.parse_header(delivery.headers.get(SIGNATURE_HEADER))
        mode = signing_mode(
            delivery.credentials,
            ("webhookSecret",),
            lambda secrets: signature.signature_matches(
                timestamp, signatures, delivery.body, secrets
            ),
        )
        assert self.signature_window_s is not None  # Paddle signs every attempt
        check_timestamp(timestamp, delivery.now_s, self.signature_window_s)
        return mode

    async def portal_url(self, request: PortalRequest) -> PortalResult:
        customer = request.subscription.get("providerCustomer")
        if not customer:
            raise Conflict(
                "portal_unsupported", "This subscription has no Paddle customer on record."
            )
        subscription = request.subscription.get("providerRef")
        session = await _call(
            request.http,
            request.credentials,
            bool(request.subscription.get("isTest")),
            f"/customers/{customer}/portal-sessions",
            {"subscription_ids": [subscription] if subscription else []},
        )
        urls = session.get("urls")
        general = urls.get("general") if isinstance(urls, dict) else None
        url = general.get("overview") if isinstance(general, dict) else None
        if not isinstance(url, str) or not url:
            raise calls.provider_error("Paddle answered without a portal address.")
        return PortalResult(url=url)


async def refund(request: FollowUpRequest) -> FollowUpResult:
    """Ask Paddle to give back part or all of the checkout's transaction (``POST /adjustments``,
    action refund): ``type: full`` for all of it, else ``partial`` on its line. Paddle approves
    refunds itself (most live ones are reviewed; the sandbox approves them every ten minutes),
    and its ``adjustment.updated`` moves the transaction once approved."""
    tx, params, credentials = request.tx, request.follow_up.params, request.credentials
    txn = str(tx["providerRef"])
    body: dict[str, Any] = {
        "action": "refund",
        "transaction_id": txn,
        "reason": str(params.get("reason") or "Refund requested by the merchant")[:500],
    }
    if params.get("whole"):
        body["type"] = "full"
    else:
        entity = await _call(request.http, credentials, tx["isTest"], f"/transactions/{txn}", None)
        lines = entity.get("details", {}).get("line_items") if isinstance(entity, dict) else None
        line = lines[0].get("id") if isinstance(lines, list) and lines else None
        if not isinstance(line, str):
            raise calls.provider_error(
                "Paddle's transaction has no line to refund.", retryable=False
            )
        amount = money.to_paddle(int(params["amount"]), str(tx["currency"]))
        body.update(type="partial", items=[{"item_id": line, "type": "partial", "amount": amount}])
    made = await _call(request.http, credentials, tx["isTest"], "/adjustments", body)
    return FollowUpResult(
        detail=f"Paddle took refund {made.get('id')} ({made.get('status')}): Paddle approves it"
    )


def checkout_body(request: CheckoutRequest) -> dict[str, Any]:
    """The ``POST /transactions`` body for a pending transaction: one non-catalog price."""
    tx = request.tx
    currency = str(tx["currency"]).upper()
    total = int(tx["amount"])
    if money.to_paddle(total, currency) is None:
        raise Conflict(
            "amount_not_supported",
            f"Paddle does not take {currency}.",
            field="currency",
        )
    quantity = int(tx.get("quantity") or 1)
    unit, rest = divmod(total, quantity)
    if rest:  # an amount that does not split evenly is charged as one line of the total
        unit, quantity = total, 1
    name = str(request.product["name"])[:MAX_NAME]
    price: dict[str, Any] = {
        "description": name,
        "name": name,
        "unit_price": {"amount": money.to_paddle(unit, currency), "currency_code": currency},
        "product": {"name": name, "tax_category": "standard"},
    }
    if quantity > 1:  # a non-catalog price allows 1 to 100 unless told otherwise
        price["quantity"] = {"minimum": 1, "maximum": quantity}
    if tx["kind"] == "subscription":
        price["billing_cycle"] = {"interval": tx["interval"], "frequency": 1}
    custom = {**(tx.get("metadata") or {}), "txId": tx["id"]}
    if tx.get("customerRef"):
        custom["customerRef"] = tx["customerRef"]
    return {
        "items": [{"quantity": quantity, "price": price}],
        "currency_code": currency,
        "custom_data": custom,
    }


async def _call(
    http: httpx.AsyncClient,
    credentials: Mapping[str, Any],
    test: bool,
    path: str,
    body: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """POST JSON to Paddle (GET when ``body`` is None; its sandbox for test mode unless
    ``apiBase`` says otherwise) and return the answer's ``data`` object
    (``edge.providers.calls``: its errors, limits and retry rule)."""
    default = SANDBOX_API_BASE if test else LIVE_API_BASE
    base = str(credentials.get("apiBase") or default).rstrip("/")
    key = str(credentials["apiKey"])
    headers = {"Authorization": f"Bearer {key}", "Paddle-Version": API_VERSION}
    method = "GET" if body is None else "POST"
    answer = await calls.call(
        http, API, method, base + path, headers=headers, hidden=[key], json_body=body
    )
    data = answer.get("data")
    if not isinstance(data, dict):
        raise calls.provider_error("Paddle answered with something that is not a Paddle entity.")
    return data


def _error_message(answer: Any) -> str | None:
    """Paddle's ``error.code`` and ``error.detail``."""
    error = answer.get("error") if isinstance(answer, dict) else None
    if not isinstance(error, dict):
        return None
    parts = [error.get("code"), error.get("detail")]
    text = "; ".join(p for p in parts if isinstance(p, str) and p)
    return text or None


API = calls.Api("Paddle", _error_message)


PADDLE = PaddleProvider(
    name="paddle",
    display_name="Paddle",
    kind="form",
    checkout_type="token",
    default_label="Card",
    credential_fields=(
        # keys made before May 2025 are 50 random characters, so any other shape is allowed
        CredentialField("apiKey", secret=True, kinds=("paddle_api_key",)),
        CredentialField("clientToken", kinds=("paddle_client_token",), strict=True),
        CredentialField("webhookSecret", secret=True, kinds=("paddle_notification_secret",)),
        CredentialField("apiBase", required=False, shape="url"),
    ),
    publishable_field="clientToken",
    signature_window_s=signature.WINDOW_S,
    refunds=True,
    read_event=events.normalize,
    follow_ups={REFUND: refund},
)
