"""BTCPay Server webhook events in the node's terms (CONTRACT 6, PROVIDERS.md "BTCPay").

Every invoice event carries ``invoiceId`` and a snapshot of the invoice's ``metadata``, where the
node put ``orderId`` = txId and ``customerRef``. The rest of that snapshot is not read: BTCPay's
checkout may add the buyer's e-mail or name to it, and the node keeps no buyer data (the stored
event takes the transaction's own metadata).

What shapes the table:
- Deduplication is on ``originalDeliveryId``: every automatic retry and every manual
  redelivery is a new ``deliveryId`` (old servers spell the key ``orignalDeliveryId``).
- Expired is terminal. Money that comes after it in full (``InvoicePaidAfterExpiration``) is
  ``payment.paid_late`` and moves the transaction to where the invoice is, expired, whatever
  order the events arrive in. A part payment after it is money for an ended checkout too:
  BTCPay says so only in ``InvoiceReceivedPayment``'s ``afterExpiration`` (no other event
  follows one that leaves the invoice short), which flags the transaction (``attention``
  paid_late) as an expiry part paid does; its ``payment`` is in the payment method's
  currency, so no amount is taken from it (the merchant refunds it in BTCPay).
- An invoice that expires part paid is money for an ended checkout too, which the merchant must
  give back or accept: ``InvoiceExpired`` with ``partiallyPaid: true`` flags the transaction
  (``attention`` paid_late) on its own, because a store may subscribe its webhook to
  ``InvoiceExpired`` without ``InvoiceExpiredPaidPartial`` (both are published together,
  ``InvoiceWatcher.UpdateInvoice``, btcpayserver@03345c28 HostedServices/InvoiceWatcher.cs:
  80-88). ``InvoiceExpiredPaidPartial`` says the same: both are the one change "the checkout
  expired", named by the invoice (``change``), so whichever comes first flags the transaction
  once and the other is history. Neither states an amount (the payload has none), so the node
  does not take the invoice's amount as money it may give back: the merchant refunds part
  payments in BTCPay (``CanRefund`` allows Expired with PaidPartial), which the node then hears
  of as below.
- Marking by hand is the merchant's word, and BTCPay allows it in almost every state
  (``InvoiceEntity.CanMarkComplete``/``CanMarkInvalid`` at btcpayserver@03345c28: settled from
  New, Processing, Expired or Invalid; invalid from New, Processing, Expired, or from a settled
  invoice that was itself marked). Marking sends one event, ``InvoiceSettled`` or
  ``InvoiceInvalid`` with ``manuallyMarked``, and nothing else. So a marked settlement is a
  success like any other and a marked invalidation a failure: the fold decides by the story
  (an invoice marked settled after it expired is money for an ended checkout,
  ``payment.paid_late``; marked invalid after it settled is a failure after success, stored),
  and a story holding both a success and an ending flags the transaction for the merchant.

Refunds. A BTCPay refund is a *pull payment* (``PullPaymentHostedService.
CreateRefundPullPayment``): an offer of an amount the buyer claims with a wallet address, which
the store then pays out (a payout: AwaitingApproval, AwaitingPayment, InProgress, Completed or
Cancelled). **A refund offered counts as given back**, from the moment the pull payment is made,
for its amount:
- the offer is the merchant's decision, made in the node or in BTCPay's own screens
  (``UIInvoiceController.Refund``), and the buyer may claim it at any time until the store
  archives it: counting it only once paid out would let the merchant offer the same money a
  second time, and the buyer claim both;
- its state says the rest: ``pending`` while not paid out, ``succeeded`` once its payouts
  complete, ``failed`` when the store withdrew it (archived) before anything was paid out,
  which is ``payment.refund_failed``: the amount no longer counts and the merchant is told.
``InvoiceRefund`` (only from BTCPay v2.4.1 on, btcpayserver#7374, commit 96cea5cac) carries the
pull payment's id and nothing else (``WebhookInvoiceRefundEvent``: ``pullPaymentId``; no amount,
no name). So the event itself is history (``UNMATCHED``, no move) that links the pull payment to
the transaction and names it (``provider_refund``, pending), and asks the node to read the pull
payment (``READ_REFUND``, ``edge.providers.btcpay.refunds.read_offered``), whose answer is the
refund with its amount (``payment.partially_refunded``; the node's sum decides refunded). Older
servers send no such event: the node learns their refunds by asking (``sync``).

Payouts (``PayoutCreated``, ``PayoutApproved``, ``PayoutUpdated``: ``WebhookPayoutEvent`` with
``payoutId``, ``pullPaymentId``, ``payoutState``, no amount, on every 2.x) match by the pull
payment's id, which the refund's events linked to the transaction. A payout ``Completed`` is the
refund's money having moved (``provider_refund`` succeeded); the others are history. A pull
payment BTCPay pays out in several payouts is reported succeeded at the first one completed:
the webhook cannot tell, and reading the pull payment (sync) gives the exact state.

Types not in the table (payment requests, subscribers) are stored as history (``UNMATCHED``, no
status move) and answered 200: BTCPay never retries a 4xx, so refusing a verified delivery would
lose it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from edge.domain import attention
from edge.domain.events import EventType
from edge.domain.status import Status
from edge.providers.base import (
    READ_REFUND,
    REFUND_PENDING,
    REFUND_SUCCEEDED,
    FollowUp,
    MalformedPayload,
    NormalizedEvent,
    ProviderRefund,
)
from edge.providers.reading import integer, json_object, mapping, refs, string, tx_id

E, S = EventType, Status

# the follow-up an InvoiceRefund asks for: read the pull payment it names

# (BTCPay type, its flag) -> (normalized type, payment target, attention). The flag is
# ``manuallyMarked`` for InvoiceSettled and InvoiceInvalid, ``partiallyPaid`` for
# InvoiceExpired, ``afterExpiration`` for InvoiceReceivedPayment, False for every other type.
EVENT_TABLE: Mapping[tuple[str, bool], tuple[EventType, Status | None, str | None]] = {
    ("InvoiceCreated", False): (E.CHECKOUT_CREATED, None, None),
    ("InvoiceReceivedPayment", False): (E.PAYMENT_PROCESSING, None, None),  # may be partial
    # a payment, whole or part, to an invoice that had ended (expired, or invalid: BTCPay sets
    # afterExpiration for both): money for an ended checkout, flagged; no move of its own
    ("InvoiceReceivedPayment", True): (E.PAYMENT_PROCESSING, None, attention.PAID_LATE),
    ("InvoiceProcessing", False): (E.PAYMENT_PROCESSING, S.PROCESSING, None),  # paid, unconfirmed
    ("InvoicePaymentSettled", False): (E.PAYMENT_PROCESSING, None, None),  # one payment confirmed
    ("InvoiceSettled", False): (E.PAYMENT_SUCCEEDED, S.SUCCEEDED, None),
    ("InvoiceSettled", True): (E.PAYMENT_SUCCEEDED, S.SUCCEEDED, None),
    ("InvoiceExpired", False): (E.CHECKOUT_EXPIRED, S.EXPIRED, None),
    ("InvoiceExpired", True): (E.CHECKOUT_EXPIRED, S.EXPIRED, attention.PAID_LATE),
    ("InvoiceExpiredPaidPartial", False): (E.CHECKOUT_EXPIRED, S.EXPIRED, attention.PAID_LATE),
    ("InvoiceInvalid", False): (E.PAYMENT_FAILED, S.FAILED, None),
    ("InvoiceInvalid", True): (E.PAYMENT_FAILED, S.FAILED, None),
    ("InvoicePaidAfterExpiration", False): (E.PAYMENT_PAID_LATE, S.EXPIRED, None),
    ("InvoiceRefund", False): (E.UNMATCHED, None, None),
}
_FLAG = {
    "InvoiceReceivedPayment": "afterExpiration",
    "InvoiceSettled": "manuallyMarked",
    "InvoiceInvalid": "manuallyMarked",
    "InvoiceExpired": "partiallyPaid",
}
# what expires the checkout: one change, named by the invoice
EXPIRY_TYPES = frozenset({"InvoiceExpired", "InvoiceExpiredPaidPartial"})
PAYOUT_TYPES = frozenset({"PayoutCreated", "PayoutApproved", "PayoutUpdated"})


def dedup_key(event: Mapping[str, Any]) -> str | None:
    """The id every retry and redelivery of one delivery shares."""
    for key in ("originalDeliveryId", "orignalDeliveryId", "deliveryId"):
        value = event.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def row_of(
    btcpay_type: str, event: Mapping[str, Any]
) -> tuple[EventType, Status | None, str | None]:
    """What an invoice event of ``btcpay_type`` means (its table row; history when it has
    none). Shared with ``sync``, which reads an invoice's status as the event that set it."""
    flag = _FLAG.get(btcpay_type)
    variant = flag is not None and event.get(flag) is True
    return EVENT_TABLE.get((btcpay_type, variant)) or (E.UNMATCHED, None, None)


def normalize(body: bytes) -> NormalizedEvent:
    """The ``NormalizedEvent`` of a verified BTCPay delivery; ``MalformedPayload`` when the body
    is not a JSON object with a ``type`` and a delivery id. Never raises otherwise."""
    event = json_object(body)
    btcpay_type, delivery = string(event, "type"), dedup_key(event)
    if btcpay_type is None or delivery is None:
        raise MalformedPayload("A BTCPay delivery needs type and deliveryId.")
    timestamp = integer(event, "timestamp")
    at_ms = timestamp * 1000 if timestamp is not None and timestamp > 0 else None
    if btcpay_type in PAYOUT_TYPES:
        return _payout(event, btcpay_type, delivery, at_ms)
    invoice_id = string(event, "invoiceId")
    event_type, target, flag = (
        row_of(btcpay_type, event) if invoice_id else (E.UNMATCHED, None, None)
    )
    metadata = mapping(event, "metadata")
    offered = _refund_offered(event) if btcpay_type == "InvoiceRefund" and invoice_id else None
    return NormalizedEvent(
        provider_event_id=delivery,
        type=event_type,
        provider_type=btcpay_type,
        occurred_at_ms=at_ms,
        tx_id=tx_id(metadata.get("orderId")),
        refs=refs(invoice_id),
        payment_status=target,
        customer_ref=string(metadata, "customerRef"),
        attention=flag,
        change=invoice_id if btcpay_type in EXPIRY_TYPES else None,
        **(offered or {}),
    )


def _refund_offered(event: Mapping[str, Any]) -> dict[str, Any] | None:
    """What ``InvoiceRefund`` tells: the pull payment made (linked, named, to be read)."""
    pull_payment = string(event, "pullPaymentId")
    if pull_payment is None:
        return None
    return {
        "link_refs": (pull_payment,),
        "provider_refund": ProviderRefund(
            pull_payment, None, REFUND_PENDING, detail="a refund offered to the buyer"
        ),
        "follow_ups": (FollowUp(READ_REFUND, {"pullPaymentId": pull_payment}),),
    }


def _payout(
    event: Mapping[str, Any], btcpay_type: str, delivery: str, at_ms: int | None
) -> NormalizedEvent:
    """A payout event: history matched by its pull payment; a completed one moved the money."""
    pull_payment = string(event, "pullPaymentId")
    state = string(event, "payoutState")
    paid_out = pull_payment is not None and state == "Completed"
    return NormalizedEvent(
        provider_event_id=delivery,
        type=E.UNMATCHED,
        provider_type=btcpay_type,
        occurred_at_ms=at_ms,
        refs=refs(pull_payment),
        provider_refund=ProviderRefund(
            str(pull_payment), None, REFUND_SUCCEEDED, detail="paid out to the buyer"
        )
        if paid_out
        else None,
    )
