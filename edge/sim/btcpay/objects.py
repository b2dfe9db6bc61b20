"""BTCPay Server's objects as Greenfield writes them: ids, invoices and webhook deliveries.

A delivery body is ``JsonConvert.SerializeObject(evt, Formatting.Indented)`` with camelCase keys
(``WebhookSender.cs``): indented JSON, two spaces, so the signature is over those exact bytes.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Mapping
from typing import Any

# BTCPay's ids are base58 (Encoders.Base58 of random bytes)
_BASE58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


def btcpay_id(length: int = 22) -> str:
    return "".join(secrets.choice(_BASE58) for _ in range(length))


def now_s() -> int:
    return int(time.time())


def markable(status: str, additional: str) -> list[str]:
    """The statuses an invoice may be marked as by hand (``availableStatusesForManualMarking``),
    as ``InvoiceEntity.CanMarkComplete``/``CanMarkInvalid`` decide them
    (btcpayserver@03345c28 BTCPayServer/Services/Invoices/InvoiceEntity.cs:804-822): Settled from
    New, Processing, Expired or Invalid, or from any status but Settled once marked; Invalid from
    New, Processing or Expired, or from any status but Invalid once marked. ``additional`` is
    the invoice's exception status (Greenfield's ``additionalStatus``)."""
    marked = additional == "Marked"
    settled = status in ("New", "Processing", "Expired", "Invalid") or (
        status != "Settled" and marked
    )
    invalid = status in ("New", "Processing", "Expired") or (status != "Invalid" and marked)
    return [s for s, ok in (("Settled", settled), ("Invalid", invalid)) if ok]


def invoice(
    *,
    invoice_id: str,
    store_id: str,
    amount: str,
    currency: str,
    metadata: Mapping[str, Any],
    checkout: Mapping[str, Any],
    checkout_link: str,
    created_s: int,
    expiration_s: int,
    monitoring_s: int,
    status: str = "New",
    additional_status: str = "None",
    paid_amount: str = "0",
) -> dict[str, Any]:
    """An ``InvoiceData`` (swagger.template.invoices.json)."""
    return {
        "id": invoice_id,
        "storeId": store_id,
        "amount": amount,
        "paidAmount": paid_amount,
        "currency": currency,
        "type": "Standard",
        "checkoutLink": checkout_link,
        "createdTime": created_s,
        "expirationTime": expiration_s,
        "monitoringExpiration": monitoring_s,
        "status": status,
        "additionalStatus": additional_status,
        "availableStatusesForManualMarking": markable(status, additional_status),
        "archived": False,
        "metadata": dict(metadata),
        "checkout": {
            "speedPolicy": "MediumSpeed",
            "paymentMethods": ["BTC-CHAIN"],
            "defaultPaymentMethod": None,
            "lazyPaymentMethods": False,
            "expirationMinutes": checkout.get("expirationMinutes") or 15,
            "monitoringMinutes": 1440,
            "paymentTolerance": 0.0,
            "redirectURL": checkout.get("redirectURL"),
            "redirectAutomatically": bool(checkout.get("redirectAutomatically")),
            "defaultLanguage": None,
        },
        "receipt": {"enabled": True, "showQR": None, "showPayments": None},
    }


def payment(value: str, received_s: int, status: str = "Processing") -> dict[str, Any]:
    """A ``Payment``: an on-chain transfer to the invoice's address."""
    return {
        "id": f"{secrets.token_hex(32)}-{secrets.randbelow(4)}",
        "receivedDate": received_s,
        "value": value,
        "fee": "0.00000000",
        "status": status,
        "destination": "bcrt1q"
        + "".join(secrets.choice("023456789acdefghjklmnpqrstuvwxyz") for _ in range(38)),
    }


def delivery(
    event_type: str,
    *,
    webhook_id: str,
    delivery_id: str,
    original_delivery_id: str,
    is_redelivery: bool,
    timestamp: int,
    store_id: str,
    invoice_id: str,
    metadata: Mapping[str, Any],
    **fields: Any,
) -> dict[str, Any]:
    """A ``WebhookInvoiceEvent`` (swagger.template.webhooks.json), keys in BTCPay's order."""
    return {
        "deliveryId": delivery_id,
        "webhookId": webhook_id,
        "originalDeliveryId": original_delivery_id,
        "isRedelivery": is_redelivery,
        "type": event_type,
        "timestamp": timestamp,
        "storeId": store_id,
        "invoiceId": invoice_id,
        "metadata": dict(metadata),
        **fields,
    }


def body(event: Mapping[str, Any]) -> bytes:
    """The bytes BTCPay sends: ``Formatting.Indented``."""
    return json.dumps(event, indent=2).encode()
