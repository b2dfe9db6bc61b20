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

from edge.errors import Conflict, ProviderError
from edge.providers.base import (
    CheckoutRequest,
    CheckoutResult,
    CredentialField,
    NormalizedEvent,
    PortalRequest,
    PortalResult,
    Provider,
)
from edge.providers.paddle import events, money, signature

LIVE_API_BASE = "https://api.paddle.com"
SANDBOX_API_BASE = "https://sandbox-api.paddle.com"  # the default for test mode
API_VERSION = "1"
SIGNATURE_HEADER = "paddle-signature"
MAX_NAME = 200  # what the node sends as a price or product name
MAX_ANSWER = 1 << 20


@dataclass(frozen=True)
class PaddleProvider(Provider):
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
            raise _provider_error("Paddle answered without a transaction id.")
        return CheckoutResult(
            fields={"token": txn, "publishableKey": request.credentials["clientToken"]},
            provider_ref=txn,
            expires_at_ms=None,
        )

    async def verify_webhook(
        self,
        headers: Mapping[str, str],
        body: bytes,
        credentials: Mapping[str, Mapping[str, Any]],
        now_s: float,
        http: httpx.AsyncClient,
    ) -> str:
        """The mode whose webhook secret signed the body (any of the header's ``h1``: Paddle
        sends one per secret while a destination's secret rotates). A genuine but stale
        signature is timestamp_out_of_tolerance."""
        timestamp, signatures = signature.parse_header(headers.get(SIGNATURE_HEADER))
        for mode, plain in credentials.items():
            secret = plain.get("webhookSecret")
            if secret and signature.signature_matches(timestamp, signatures, body, [secret]):
                assert self.signature_window_s is not None  # Paddle signs every attempt
                signature.check_timestamp(timestamp, now_s, self.signature_window_s)
                return mode
        raise signature.no_matching_signature()

    def normalize(self, body: bytes, mode: str) -> NormalizedEvent:
        return events.normalize(body)

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
            raise _provider_error("Paddle answered without a portal address.")
        return PortalResult(url=url)


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
    body: Mapping[str, Any],
) -> dict[str, Any]:
    """POST JSON to Paddle (its sandbox for test mode unless ``apiBase`` says otherwise) and
    return the answer's ``data`` object; ``502 provider_error`` on a transport error, a
    refusal, or an answer without a ``data`` object."""
    default = SANDBOX_API_BASE if test else LIVE_API_BASE
    base = str(credentials.get("apiBase") or default).rstrip("/")
    key = str(credentials["apiKey"])
    headers = {"Authorization": f"Bearer {key}", "Paddle-Version": API_VERSION}
    try:
        response = await http.post(base + path, json=body, headers=headers)
    except httpx.HTTPError as exc:
        # the exception text may carry the request; the class name says enough
        raise _provider_error(f"Could not reach Paddle ({type(exc).__name__}).") from None
    try:
        answer = response.json() if len(response.content) <= MAX_ANSWER else None
    except ValueError:
        answer = None
    if not response.is_success:
        message = f"Paddle answered {response.status_code}"
        detail = _error_message(answer)
        if detail:
            message += ": " + detail.replace(key, "[API key]")
        raise _provider_error(
            message[:500] + ("" if message.endswith(".") else "."),
            retryable=response.status_code >= 500 or response.status_code == 429,
        )
    data = answer.get("data") if isinstance(answer, dict) else None
    if not isinstance(data, dict):
        raise _provider_error("Paddle answered with something that is not a Paddle entity.")
    return data


def _error_message(answer: Any) -> str | None:
    """Paddle's ``error.code`` and ``error.detail``."""
    error = answer.get("error") if isinstance(answer, dict) else None
    if not isinstance(error, dict):
        return None
    parts = [error.get("code"), error.get("detail")]
    text = "; ".join(p for p in parts if isinstance(p, str) and p)
    return text or None


def _provider_error(message: str, retryable: bool = True) -> ProviderError:
    return ProviderError("provider_error", message, retryable=retryable)


PADDLE = PaddleProvider(
    name="paddle",
    kind="form",
    checkout_type="token",
    default_label="Card",
    icon="card.svg",
    credential_fields=(
        # keys made before May 2025 are 50 random characters, so any other shape is allowed
        CredentialField("apiKey", secret=True, kinds=("paddle_api_key",)),
        CredentialField("clientToken", kinds=("paddle_client_token",), strict=True),
        CredentialField("webhookSecret", secret=True, kinds=("paddle_notification_secret",)),
        CredentialField("apiBase", required=False, shape="url"),
    ),
    publishable_field="clientToken",
    signature_window_s=signature.WINDOW_S,
)
