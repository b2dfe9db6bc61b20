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

from collections.abc import Mapping
from typing import Any

from edge.domain.events import EventType
from edge.domain.status import Status
from edge.providers.base import MalformedPayload, NormalizedEvent
from edge.providers.reading import integer, json_object, mapping, refs, string, tx_id

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
    event = json_object(body)
    btcpay_type, delivery = string(event, "type"), dedup_key(event)
    if btcpay_type is None or delivery is None:
        raise MalformedPayload("A BTCPay delivery needs type and deliveryId.")
    invoice_id = string(event, "invoiceId")
    by_hand = event.get("manuallyMarked") is True
    row = EVENT_TABLE.get((btcpay_type, by_hand)) if invoice_id else None
    event_type, target = row or (E.UNMATCHED, None)
    metadata = mapping(event, "metadata")
    timestamp = integer(event, "timestamp")
    return NormalizedEvent(
        provider_event_id=delivery,
        type=event_type,
        provider_type=btcpay_type,
        occurred_at_ms=timestamp * 1000 if timestamp is not None and timestamp > 0 else None,
        tx_id=tx_id(metadata.get("orderId")),
        refs=refs(invoice_id),
        payment_status=target,
        customer_ref=string(metadata, "customerRef"),
    )
