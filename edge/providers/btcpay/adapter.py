"""BTCPay Server (Greenfield API): crypto invoices the buyer is redirected to, and their webhooks.

The checkout is an invoice (``POST /api/v1/stores/{storeId}/invoices``, ``Authorization: token
<apiKey>``). The node's transaction id travels as ``metadata.orderId`` (BTCPay indexes it) with
``customerRef`` beside it, and the invoice id is linked to the transaction, so every invoice event
matches (CONTRACT 4.2); a checkout taken up again after its first request was cut short adopts
the invoice that request made, if any (``_made_before``). BTCPay reports an invoice that is
left unpaid (``InvoiceExpired``), so the node keeps no timer of its own. There is no hosted
portal (``409 portal_unsupported``) and no subscription.

Refunds are pull payments the buyer claims, made once whatever answer is lost
(``edge.providers.btcpay.refunds``: no idempotency key, so ``refund_key_s`` stays None and every
attempt asks first); what the node learns by asking is ``edge.providers.btcpay.sync``; the
webhooks are read by ``edge.providers.btcpay.events``.

The API key goes only into the ``Authorization`` header: no message the node keeps or answers
contains it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from edge.errors import Conflict
from edge.providers import answers
from edge.providers.base import (
    CheckoutRequest,
    CheckoutResult,
    CredentialField,
    Provider,
)
from edge.providers.btcpay import checking, events, money, refunds, signature, sync
from edge.providers.btcpay.api import API, Greenfield, Invoice
from edge.providers.reading import mapping

# Long enough to open a wallet and pay; BTCPay locks the exchange rate for this long.
CHECKOUT_LIFETIME_MIN = 30
# the statuses of an invoice a buyer can still be sent to (or has paid)
OPEN = ("New", "Processing", "Settled")


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
        api = Greenfield.of(request.http, credentials)
        body = invoice_body(request)
        invoice = await _made_before(api, body) if request.again else None
        if invoice is None:
            invoice = await api.post(api.store_url("/invoices"), body)
        made = answers.read(API, invoice, Invoice)
        expires = made.expiration_time
        return CheckoutResult(
            fields={"url": made.checkout_link},
            provider_ref=made.id,
            expires_at_ms=expires * 1000 if expires is not None else None,
        )


async def _made_before(api: Greenfield, body: Mapping[str, Any]) -> dict[str, Any] | None:
    """The invoice an earlier request for this transaction made, if BTCPay has one still open:
    BTCPay honours no idempotency key, so a checkout taken up again (its first request cut
    short after it may have reached BTCPay) asks first, by the ``orderId`` BTCPay indexes.
    Anyone may make an invoice naming any ``orderId`` (a Point of Sale form takes it, and the
    amount, from whoever posts it), so only one asking all the node would have asked is
    adopted: its metadata as sent (``_as_sent``), the same amount and currency, and the buyer
    sent on to the same address. One that ended (expired, invalid) is not handed out again: a
    new one is made."""
    order_id = body["metadata"]["orderId"]
    listed = await api.read(api.store_url("/invoices", orderId=order_id))
    for invoice in listed if isinstance(listed, list) else ():
        if (
            isinstance(invoice, dict)
            and invoice.get("status") in OPEN
            and _as_sent(mapping(invoice, "metadata"), body["metadata"])
            and mapping(invoice, "checkout").get("redirectURL") == body["checkout"]["redirectURL"]
            and invoice.get("currency") == body["currency"]
            and _same_amount(invoice.get("amount"), body["amount"])
        ):
            return invoice
    return None


def _as_sent(metadata: Mapping[str, Any], sent: Mapping[str, Any]) -> bool:
    """Every field of the metadata the node sends is there as sent (BTCPay keeps what it is
    given, and may add to it), and none of a Point of Sale's cart."""
    return "posData" not in metadata and all(metadata.get(k) == v for k, v in sent.items())


def _same_amount(listed: Any, asked: str) -> bool:
    """Greenfield answers an amount as a decimal string ("10.00" for an asked "10")."""
    try:
        return isinstance(listed, str | int | float) and Decimal(str(listed)) == Decimal(asked)
    except InvalidOperation:
        return False


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


BTCPAY = BTCPayProvider(
    checkout_keyed=False,
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
    webhook=signature.WEBHOOK,
    read_event=events.normalize,
    follow_ups={events.READ_REFUND: refunds.read_offered},
    send_refund=refunds.send_refund,
    refunds_of=refunds.refunds_of,
    sync=sync.sync,
    list_events=sync.list_events,
    check_credentials=checking.check_credentials,
)
