"""BTCPay Server (Greenfield API): crypto invoices the buyer is redirected to, and their webhooks.

The checkout is an invoice (``POST /api/v1/stores/{storeId}/invoices``, ``Authorization: token
<apiKey>``). The node's transaction id travels as ``metadata.orderId`` (BTCPay indexes it) with
``customerRef`` beside it, and the invoice id is linked to the transaction, so every invoice event
matches (CONTRACT 4.2). BTCPay reports an invoice that is left unpaid (``InvoiceExpired``), so the
node keeps no timer of its own. There is no hosted portal (``409 portal_unsupported``) and no
subscription.

The API key goes only into the ``Authorization`` header: no message the node keeps or answers
contains it.
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
    Provider,
)
from edge.providers.btcpay import events, money, signature
from edge.providers.signing import signing_mode

# Long enough to open a wallet and pay; BTCPay locks the exchange rate for this long.
CHECKOUT_LIFETIME_MIN = 30


@dataclass(frozen=True)
class BTCPayProvider(Provider):
    async def create_checkout(self, request: CheckoutRequest) -> CheckoutResult:
        tx, credentials = request.tx, request.credentials
        if tx["kind"] == "subscription":
            raise Conflict(
                "subscription_not_supported",
                "BTCPay Server takes one-off payments only; choose another provider.",
                field="provider",
            )
        base = str(credentials["serverUrl"]).rstrip("/")
        path = f"/api/v1/stores/{credentials['storeId']}/invoices"
        invoice = await _call(request.http, credentials, base + path, invoice_body(request))
        invoice_id, url = invoice.get("id"), invoice.get("checkoutLink")
        if not isinstance(invoice_id, str) or not invoice_id or not isinstance(url, str):
            raise calls.provider_error("BTCPay answered without an invoice and its checkout link.")
        expires = invoice.get("expirationTime")
        return CheckoutResult(
            fields={"url": url},
            provider_ref=invoice_id,
            expires_at_ms=expires * 1000
            if isinstance(expires, int) and not isinstance(expires, bool)
            else None,
        )

    async def verify_webhook(self, delivery: Delivery) -> str:
        """The mode whose webhook secret signed the exact body bytes. No timestamp window:
        BTCPay's retries resend the first body (CONTRACT 4.3)."""
        digest = signature.parse_header(delivery.headers.get(signature.HEADER))
        return signing_mode(
            delivery.credentials,
            ("webhookSecret",),
            lambda secrets: signature.signature_matches(digest, delivery.body, secrets),
        )


async def refund(request: FollowUpRequest) -> FollowUpResult:
    """Offer the buyer their money back (``POST /api/v1/invoices/{invoiceId}/refund``): BTCPay
    makes a pull payment the buyer claims with a wallet address, in the invoice's currency
    (``Fiat``) or a part of it (``Custom``). Money moves only once the buyer claims it, so the
    transaction's status does not move; the claim link is what the merchant sends the buyer."""
    tx, params, credentials = request.tx, request.follow_up.params, request.credentials
    body: dict[str, Any] = {
        "name": f"Refund of {tx['id']}",
        "description": str(params.get("reason") or "")[:500],
    }
    if params.get("whole"):
        body["refundVariant"] = "Fiat"
    else:
        body.update(
            refundVariant="Custom",
            customAmount=money.to_btcpay(int(params["amount"]), str(tx["currency"])),
            customCurrency=tx["currency"],
        )
    base = str(credentials["serverUrl"]).rstrip("/")
    made = await _call(
        request.http, credentials, f"{base}/api/v1/invoices/{tx['providerRef']}/refund", body
    )
    link = made.get("viewLink")
    return FollowUpResult(
        detail=f"BTCPay made a pull payment for the buyer to claim: {link}"
        if isinstance(link, str)
        else "BTCPay made a pull payment for the buyer to claim"
    )


def invoice_body(request: CheckoutRequest) -> dict[str, Any]:
    """The create-invoice request for a pending transaction (Greenfield ``CreateInvoiceRequest``:
    ``amount`` is a decimal string)."""
    tx = request.tx
    currency = str(tx["currency"]).upper()
    metadata: dict[str, Any] = {**(tx.get("metadata") or {}), "orderId": tx["id"]}
    if tx.get("customerRef"):
        metadata["customerRef"] = tx["customerRef"]
    metadata["itemDesc"] = str(request.product["name"])
    return {
        "amount": money.to_btcpay(int(tx["amount"]), currency),
        "currency": currency,
        "metadata": metadata,
        "checkout": {
            "redirectURL": request.success_url,
            "redirectAutomatically": True,
            "expirationMinutes": CHECKOUT_LIFETIME_MIN,
        },
    }


async def _call(
    http: httpx.AsyncClient, credentials: Mapping[str, Any], url: str, body: Mapping[str, Any]
) -> dict[str, Any]:
    """POST JSON to BTCPay and return the JSON object (``edge.providers.calls``: its errors,
    limits and retry rule)."""
    key = str(credentials["apiKey"])
    headers = {"Authorization": f"token {key}", "Accept": "application/json"}
    return await calls.call(http, API, "POST", url, headers=headers, hidden=[key], json_body=body)


def _error_message(answer: Any) -> str | None:
    """Greenfield's errors: ``{code, message}``, or a list of ``{path, message}`` for a request
    that does not validate."""
    if isinstance(answer, dict) and isinstance(answer.get("message"), str):
        return str(answer["message"])
    if isinstance(answer, list):
        parts = [
            f"{item.get('path')}: {item.get('message')}"
            for item in answer[:5]
            if isinstance(item, dict)
        ]
        return "; ".join(parts) or None
    return None


API = calls.Api("BTCPay Server", _error_message)


BTCPAY = BTCPayProvider(
    name="btcpay",
    display_name="BTCPay Server",
    kind="crypto",
    checkout_type="redirect",
    default_label="Crypto",
    credential_fields=(
        CredentialField("serverUrl", shape="url"),
        CredentialField("apiKey", secret=True),
        CredentialField("storeId"),
        CredentialField("webhookSecret", secret=True),
    ),
    refunds=True,
    supports_subscriptions=False,
    read_event=events.normalize,
    follow_ups={REFUND: refund},
)
