"""BTCPay Server's objects as Greenfield writes them: ids, invoices, their payment methods, pull
payments and their payouts, and webhook deliveries.

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


def payment(
    value: str, received_s: int, status: str = "Processing", destination: str | None = None
) -> dict[str, Any]:
    """A ``Payment``: an on-chain transfer to the invoice's address."""
    return {
        "id": f"{secrets.token_hex(32)}-{secrets.randbelow(4)}",
        "receivedDate": received_s,
        "value": value,
        "fee": "0.00000000",
        "status": status,
        "destination": destination or address(),
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


def address() -> str:
    """A regtest on-chain address (bech32, made up)."""
    return "bcrt1q" + "".join(secrets.choice("023456789acdefghjklmnpqrstuvwxyz") for _ in range(38))


def payment_method(
    *,
    destination: str,
    rate: str,
    amount: str,
    paid: str,
    due: str,
    payments: list[dict[str, Any]],
) -> dict[str, Any]:
    """An on-chain ``InvoicePaymentMethodDataModel`` (swagger.template.invoices.json), keys in
    the C# model's order (BTCPayServer.Client/Models/InvoicePaymentMethodDataModel.cs): amounts
    in BTC as decimal strings, ``rate`` in the invoice currency per BTC."""
    return {
        "activated": True,
        "destination": destination,
        "paymentLink": f"bitcoin:{destination}?amount={due}",
        "rate": rate,
        "paymentMethodPaid": paid,
        "totalPaid": paid,
        "due": due,
        "amount": amount,
        "paymentMethodFee": "0.00000000",
        "payments": payments,
        "paymentMethodId": "BTC-CHAIN",
        "additionalData": {
            "keyPath": "0/1",
            "payjoinEnabled": False,
            "accountDerivation": None,
            "recommendedFeeRate": "1.0",
            "paymentMethodFeeRate": "0",
        },
        "currency": "BTC",
    }


def pull_payment(
    *,
    pull_payment_id: str,
    name: str,
    description: str,
    currency: str,
    amount: str,
    auto_approve: bool,
    view_link: str,
    starts_s: int,
) -> dict[str, Any]:
    """A ``PullPaymentData`` as Greenfield writes it (BTCPayServer.Client/Models/
    PullPaymentBaseData.cs, ``CreatePullPaymentData`` in GreenfieldInvoiceController.cs and
    GreenfieldPullPaymentController.cs): ``startsAt``/``expiresAt`` unix seconds (a refund's has
    no end), ``BOLT11Expiration`` whole days (``TimeSpanJsonConverter.Days``, 30 by default,
    ``StoreBlob.RefundBOLT11Expiration``), keys in the model's order."""
    return {
        "startsAt": starts_s,
        "expiresAt": None,
        "id": pull_payment_id,
        "name": name,
        "description": description,
        "currency": currency,
        "amount": amount,
        "BOLT11Expiration": 30,
        "archived": False,
        "viewLink": view_link,
        "autoApproveClaims": auto_approve,
    }


def payout(
    *,
    payout_id: str,
    pull_payment_id: str,
    date_s: int,
    original_amount: str,
    original_currency: str,
    destination: str,
    payout_method_id: str = "BTC-CHAIN",
) -> dict[str, Any]:
    """A ``PayoutData`` as Greenfield writes it (BTCPayServer.Client/Models/PayoutData.cs,
    ``ToModel`` in GreenfieldPullPaymentController.cs:400-420): a new claim, awaiting approval,
    with no ``payoutAmount`` and no ``paymentProof`` (null) until it is approved and paid."""
    return {
        "date": date_s,
        "id": payout_id,
        "pullPaymentId": pull_payment_id,
        "destination": destination,
        "payoutMethodId": payout_method_id,
        "originalAmount": original_amount,
        "originalCurrency": original_currency,
        "payoutCurrency": "BTC",
        "payoutAmount": None,
        "state": "AwaitingApproval",
        "revision": 0,
        "paymentProof": None,
        "metadata": {},
    }


def onchain_proof() -> dict[str, Any]:
    """The proof of a payout paid on chain (``PayoutTransactionOnChainBlob``, BTCPayServer/Data/
    Payouts/BitcoinLike/PayoutTransactionOnChainBlob.cs): its transaction id."""
    txid = secrets.token_hex(32)
    return {
        "transactionId": txid,
        "candidates": [txid],
        "proofType": "PayoutTransactionOnChainBlob",
        "accounted": True,
    }


def payout_delivery(
    event_type: str,
    *,
    webhook_id: str,
    delivery_id: str,
    timestamp: int,
    store_id: str,
    payout_id: str,
    pull_payment_id: str,
    payout_state: str,
) -> dict[str, Any]:
    """A ``WebhookPayoutEvent`` (BTCPayServer.Client/Models/WebhookInvoiceEvent.cs:8-21, the
    ``PayoutCreated``/``PayoutApproved``/``PayoutUpdated`` of swagger.template.webhooks.json's
    ``x-webhooks``), keys in BTCPay's order."""
    return {
        "deliveryId": delivery_id,
        "webhookId": webhook_id,
        "originalDeliveryId": delivery_id,
        "isRedelivery": False,
        "type": event_type,
        "timestamp": timestamp,
        "storeId": store_id,
        "payoutId": payout_id,
        "pullPaymentId": pull_payment_id,
        "payoutState": payout_state,
    }
