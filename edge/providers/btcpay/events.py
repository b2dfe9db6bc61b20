"""BTCPay Server invoice events in the node's terms (CONTRACT 6, PROVIDERS.md "BTCPay").

Every invoice event carries ``invoiceId`` and a snapshot of the invoice's ``metadata``, where the
node put ``orderId`` = txId and ``customerRef``. The rest of that snapshot is not read: BTCPay's
checkout may add the buyer's e-mail or name to it, and the node keeps no buyer data (the stored
event takes the transaction's own metadata).

What shapes the table:
- Deduplication is on ``originalDeliveryId``: every automatic retry and every manual
  redelivery is a new ``deliveryId`` (old servers spell the key ``orignalDeliveryId``).
- Expired is terminal. Money that comes after (``InvoicePaidAfterExpiration``,
  ``InvoiceExpiredPaidPartial``) is ``payment.paid_late`` and moves the transaction to where
  the invoice is, expired, whatever order the two arrive in.
- Marking by hand is the merchant's word, and BTCPay allows it in almost every state
  (``InvoiceEntity.CanMarkComplete``/``CanMarkInvalid`` at btcpayserver@03345c28: settled from
  New, Processing, Expired or Invalid; invalid from New, Processing, Expired, or from a settled
  invoice that was itself marked). Marking sends one event, ``InvoiceSettled`` or
  ``InvoiceInvalid`` with ``manuallyMarked``, and nothing else. So a marked settlement is a
  success like any other and a marked invalidation a failure: the fold decides by the story
  (an invoice marked settled after it expired is money for an ended checkout,
  ``payment.paid_late``; marked invalid after it settled is a failure after success, stored),
  and a story holding both a success and an ending flags the transaction for the merchant.
- ``InvoiceRefund`` is a refund *offered* (a pull payment the buyer may never claim), not money
  moved: it is stored as history and changes nothing.
Types not in the table (payment requests, payouts, subscribers) are stored as history
(``UNMATCHED``, no status move) and answered 200: BTCPay never retries a 4xx, so refusing a
verified delivery would lose it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from edge.domain import ids
from edge.domain.events import EventType
from edge.domain.status import Status
from edge.providers.base import MalformedPayload, NormalizedEvent

E, S = EventType, Status

# (BTCPay type, marked by hand) -> (normalized type, payment target)
EVENT_TABLE: Mapping[tuple[str, bool], tuple[EventType, Status | None]] = {
    ("InvoiceCreated", False): (E.CHECKOUT_CREATED, None),
    ("InvoiceReceivedPayment", False): (E.PAYMENT_PROCESSING, None),  # may be partial
    ("InvoiceProcessing", False): (E.PAYMENT_PROCESSING, S.PROCESSING),  # paid, unconfirmed
    ("InvoicePaymentSettled", False): (E.PAYMENT_PROCESSING, None),  # one payment confirmed
    ("InvoiceSettled", False): (E.PAYMENT_SUCCEEDED, S.SUCCEEDED),
    ("InvoiceSettled", True): (E.PAYMENT_SUCCEEDED, S.SUCCEEDED),
    ("InvoiceExpired", False): (E.CHECKOUT_EXPIRED, S.EXPIRED),
    ("InvoiceInvalid", False): (E.PAYMENT_FAILED, S.FAILED),
    ("InvoiceInvalid", True): (E.PAYMENT_FAILED, S.FAILED),
    ("InvoicePaidAfterExpiration", False): (E.PAYMENT_PAID_LATE, S.EXPIRED),
    ("InvoiceExpiredPaidPartial", False): (E.PAYMENT_PAID_LATE, S.EXPIRED),
    ("InvoiceRefund", False): (E.UNMATCHED, None),
}


def dedup_key(event: Mapping[str, Any]) -> str | None:
    """The id every retry and redelivery of one delivery shares."""
    for key in ("originalDeliveryId", "orignalDeliveryId", "deliveryId"):
        value = event.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def normalize(body: bytes) -> NormalizedEvent:
    """The ``NormalizedEvent`` of a verified BTCPay delivery; ``MalformedPayload`` when the body
    is not a JSON object with a ``type`` and a delivery id. Never raises otherwise."""
    try:
        event = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise MalformedPayload("The body is not JSON.") from None
    if not isinstance(event, dict):
        raise MalformedPayload("The body is not a JSON object.")
    btcpay_type, delivery = event.get("type"), dedup_key(event)
    if not isinstance(btcpay_type, str) or not btcpay_type or delivery is None:
        raise MalformedPayload("A BTCPay delivery needs type and deliveryId.")
    invoice_id = _str(event.get("invoiceId"))
    by_hand = event.get("manuallyMarked") is True
    row = EVENT_TABLE.get((btcpay_type, by_hand)) if invoice_id else None
    event_type, target = row or (E.UNMATCHED, None)
    metadata = event.get("metadata")
    metadata = metadata if isinstance(metadata, dict) else {}
    order_id = metadata.get("orderId")
    timestamp = event.get("timestamp")
    return NormalizedEvent(
        provider_event_id=delivery,
        type=event_type,
        provider_type=btcpay_type,
        occurred_at_ms=timestamp * 1000
        if isinstance(timestamp, int) and not isinstance(timestamp, bool) and timestamp > 0
        else None,
        tx_id=order_id if ids.is_tx_id(order_id) else None,
        refs=(invoice_id,) if invoice_id else (),
        payment_status=target,
        customer_ref=_str(metadata.get("customerRef")),
    )


def _str(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
