"""PayPal events in the node's terms (CONTRACT 6, PROVIDERS.md "Event mapping"): the table and a
reader per resource kind (order, capture, refund, dispute, sale, subscription).

``EVENT_TABLE`` says what an event *means*; the readers say what it *refers to*: the node's
transaction id (``custom_id`` / ``invoice_id`` / ``custom``, which the node set to it), PayPal
ids to match and link, amount and subscription. Types not in the table are stored as history
(``UNMATCHED``, no status move) and answered 200, so PayPal does not retry them for ever.

Three PayPal facts shape the table:
- An approved order is not paid: the node must capture it, so ``CHECKOUT.ORDER.APPROVED`` asks
  for a durable capture follow-up and moves no status.
- A capture's outcome reaches the node twice, in the capture's answer and in its webhook: both
  carry the dedup id ``capture:{id}:{status}``, so it is applied and counted once.
- A refund says the total refunded so far (``seller_payable_breakdown.total_refunded_amount``),
  not whether it is full: the node sums refunds against the transaction's amount.
- A subscription's sale does not say whether it is the first: each one asks to start the
  subscription, and the fold (edge.domain.convergence) lets the earliest start it; the others
  are renewals, whatever order they arrive in.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from edge.domain.convergence import Refund
from edge.domain.events import EventType
from edge.domain.status import Status
from edge.providers.base import FollowUp, MalformedPayload, NormalizedEvent
from edge.providers.paypal.money import from_paypal
from edge.providers.reading import (
    first,
    json_object,
    look_up,
    mapping,
    node_money,
    refs,
    string,
    tx_id,
)

E, S = EventType, Status
CAPTURE = "capture"
FROM_RESOURCE = "from_resource"

# (PayPal event type, variant) -> (normalized type, payment target, subscription target); the
# variant is "" unless VARIANTS has a function for the type.
EVENT_TABLE: Mapping[tuple[str, str], tuple[EventType, Status | None, Status | str | None]] = {
    ("CHECKOUT.ORDER.APPROVED", ""): (E.PAYMENT_PROCESSING, None, None),
    ("CHECKOUT.PAYMENT-APPROVAL.REVERSED", ""): (E.PAYMENT_FAILED, S.FAILED, None),
    ("PAYMENT.CAPTURE.COMPLETED", ""): (E.PAYMENT_SUCCEEDED, S.SUCCEEDED, None),
    ("PAYMENT.CAPTURE.PENDING", ""): (E.PAYMENT_PROCESSING, S.PROCESSING, None),
    ("PAYMENT.CAPTURE.DECLINED", ""): (E.PAYMENT_FAILED, S.FAILED, None),
    ("PAYMENT.CAPTURE.DENIED", ""): (E.PAYMENT_FAILED, S.FAILED, None),
    ("PAYMENT.CAPTURE.REFUNDED", ""): (E.PAYMENT_REFUNDED, S.REFUNDED, None),
    ("PAYMENT.CAPTURE.REVERSED", ""): (E.PAYMENT_REFUNDED, S.REFUNDED, None),
    ("CUSTOMER.DISPUTE.CREATED", ""): (E.PAYMENT_DISPUTED, S.DISPUTED, None),
    ("CUSTOMER.DISPUTE.RESOLVED", "won"): (E.PAYMENT_DISPUTE_CLOSED, S.SUCCEEDED, None),
    ("CUSTOMER.DISPUTE.RESOLVED", "lost"): (E.PAYMENT_DISPUTE_CLOSED, S.REFUNDED, None),
    ("BILLING.SUBSCRIPTION.CREATED", ""): (E.SUBSCRIPTION_CREATED, None, None),
    ("BILLING.SUBSCRIPTION.ACTIVATED", ""): (E.SUBSCRIPTION_UPDATED, None, S.ACTIVE),
    ("BILLING.SUBSCRIPTION.UPDATED", ""): (E.SUBSCRIPTION_UPDATED, None, FROM_RESOURCE),
    ("BILLING.SUBSCRIPTION.SUSPENDED", ""): (E.SUBSCRIPTION_UPDATED, None, S.PAUSED),
    ("BILLING.SUBSCRIPTION.CANCELLED", ""): (E.SUBSCRIPTION_CANCELED, None, S.CANCELED),
    ("BILLING.SUBSCRIPTION.EXPIRED", ""): (E.SUBSCRIPTION_CANCELED, None, S.CANCELED),
    ("BILLING.SUBSCRIPTION.PAYMENT.FAILED", ""): (
        E.SUBSCRIPTION_PAYMENT_FAILED, None, S.PAST_DUE,
    ),
    ("PAYMENT.SALE.COMPLETED", "subscription"): (
        E.SUBSCRIPTION_PAYMENT_SUCCEEDED, S.SUCCEEDED, S.ACTIVE,
    ),
}  # fmt: skip

# A dispute's outcome (customer_disputes_v1 ``dispute_outcome.outcome_code``): kept, or lost.
DISPUTE_WON = frozenset({"RESOLVED_SELLER_FAVOUR", "CANCELED_BY_BUYER", "DENIED"})
DISPUTE_LOST = frozenset({"RESOLVED_BUYER_FAVOUR", "ACCEPTED", "RESOLVED_WITH_PAYOUT"})

VARIANTS: Mapping[str, Callable[[Mapping[str, Any]], str]] = {
    "CUSTOMER.DISPUTE.RESOLVED": lambda r: (
        "won"
        if string(mapping(r, "dispute_outcome"), "outcome_code") in DISPUTE_WON
        else "lost"
        if string(mapping(r, "dispute_outcome"), "outcome_code") in DISPUTE_LOST
        else ""
    ),
    # a sale outside a subscription is a v1 payment the node never makes
    "PAYMENT.SALE.COMPLETED": lambda r: "subscription" if string(r, "billing_agreement_id") else "",
}

SUBSCRIPTION_STATUS: Mapping[str, Status | None] = {
    "APPROVAL_PENDING": None,
    "APPROVED": None,
    "ACTIVE": S.ACTIVE,
    "SUSPENDED": S.PAUSED,
    "CANCELLED": S.CANCELED,
    "EXPIRED": S.CANCELED,
}

CAPTURE_OUTCOMES: Mapping[str, tuple[EventType, Status]] = {
    "COMPLETED": (E.PAYMENT_SUCCEEDED, S.SUCCEEDED),
    "PENDING": (E.PAYMENT_PROCESSING, S.PROCESSING),
    "DECLINED": (E.PAYMENT_FAILED, S.FAILED),
    "FAILED": (E.PAYMENT_FAILED, S.FAILED),
}

# Every PayPal type the table maps: what a webhook subscription should listen to.
HANDLED_EVENT_TYPES: tuple[str, ...] = tuple(dict.fromkeys(t for t, _ in EVENT_TABLE))


@dataclass(frozen=True)
class _Facts:
    """What one PayPal resource refers to, whatever the event says about it."""

    tx_id: str | None = None
    refs: tuple[str, ...] = ()
    link_refs: tuple[str, ...] = ()
    subscription_ref: str | None = None
    subscription_status: str | None = None
    period_end_ms: int | None = None
    amount: int | None = None
    currency: str | None = None
    unreadable: str | None = None  # PayPal's figure, when it has no exact node value
    refund: Refund | None = None
    capture_dedup: str | None = None
    follow_ups: tuple[FollowUp, ...] = ()


def normalize(body: bytes) -> NormalizedEvent:
    """The ``NormalizedEvent`` of a verified PayPal event; ``MalformedPayload`` when the body is
    not JSON or lacks ``id``, ``event_type`` or ``resource``. Never raises otherwise."""
    event = json_object(body)
    event_id, paypal_type = string(event, "id"), string(event, "event_type")
    resource = event.get("resource")
    if not event_id or not paypal_type or not isinstance(resource, dict):
        raise MalformedPayload("A PayPal event needs id, event_type and resource.")
    _, row = look_up(EVENT_TABLE, VARIANTS, paypal_type, resource)
    event_type, payment_target, subscription_target = row or (E.UNMATCHED, None, None)
    facts = _reader(paypal_type)(paypal_type, resource)
    if subscription_target == FROM_RESOURCE:
        subscription_target = SUBSCRIPTION_STATUS.get(facts.subscription_status or "")
    sale = paypal_type == "PAYMENT.SALE.COMPLETED" and row is not None
    return NormalizedEvent(
        provider_event_id=event_id,
        type=event_type,
        provider_type=paypal_type,
        occurred_at_ms=_time_ms(event.get("create_time")),
        tx_id=facts.tx_id,
        refs=facts.refs,
        link_refs=facts.link_refs,
        payment_status=payment_target,
        starts_subscription=sale,
        subscription_ref=facts.subscription_ref,
        subscription_status=Status(subscription_target) if subscription_target else None,
        current_period_end_ms=facts.period_end_ms,
        amount_minor=facts.amount,
        currency=facts.currency,
        unreadable_amount=facts.unreadable,
        refund=facts.refund if paypal_type == "PAYMENT.CAPTURE.REFUNDED" else None,
        dedup_ids=(event_id, facts.capture_dedup) if facts.capture_dedup else (event_id,),
        follow_ups=facts.follow_ups if paypal_type == "CHECKOUT.ORDER.APPROVED" else (),
    )


def capture_event(order: Mapping[str, Any]) -> NormalizedEvent | None:
    """The event a capture's answer (an order with its capture) stands for: the same facts
    and the same dedup id as the capture's own webhook, so whichever comes second is a
    duplicate. None when the answer holds no capture in a status the node knows."""
    unit = first(order.get("purchase_units"))
    capture = first(mapping(unit, "payments").get("captures"))
    status = string(capture, "status") or ""
    outcome = CAPTURE_OUTCOMES.get(status)
    capture_id = string(capture, "id")
    if outcome is None or capture_id is None:
        return None
    facts = _read_capture(f"PAYMENT.CAPTURE.{status}", capture)
    event_type, target = outcome
    dedup = facts.capture_dedup or f"capture:{capture_id}:{status}"
    return NormalizedEvent(
        provider_event_id=dedup,
        type=event_type,
        provider_type=f"capture answer {status}",
        occurred_at_ms=_time_ms(capture.get("update_time") or capture.get("create_time")),
        tx_id=facts.tx_id or tx_id(unit.get("custom_id")),
        refs=(*facts.refs, *refs(order.get("id"))),
        link_refs=facts.link_refs,
        payment_status=target,
        amount_minor=facts.amount,
        currency=facts.currency,
        unreadable_amount=facts.unreadable,
        dedup_ids=(dedup,),
    )


def first_capture(order: Mapping[str, Any]) -> str | None:
    """The id of an order's (first) capture, from ``GET /v2/checkout/orders/{id}``."""
    unit = first(order.get("purchase_units"))
    return string(first(mapping(unit, "payments").get("captures")), "id")


# --- readers, one per resource kind ------------------------------------------------------


def _read_order(paypal_type: str, r: Mapping[str, Any]) -> _Facts:
    unit = first(r.get("purchase_units"))
    order_id = string(r, "id")
    approved = order_id is not None and r.get("status") == "APPROVED"
    return _Facts(
        tx_id=tx_id(unit.get("custom_id")) or tx_id(unit.get("invoice_id")),
        refs=refs(order_id),
        **_money(mapping(unit, "amount")),
        follow_ups=(FollowUp(CAPTURE, {"orderId": order_id}),) if approved else (),
    )


def _read_capture(paypal_type: str, r: Mapping[str, Any]) -> _Facts:
    capture_id = string(r, "id")
    order_id = string(mapping(mapping(r, "supplementary_data"), "related_ids"), "order_id")
    status = string(r, "status")
    dedup = f"capture:{capture_id}:{status}" if capture_id and status in CAPTURE_OUTCOMES else None
    return _Facts(
        tx_id=tx_id(r.get("custom_id")) or tx_id(r.get("invoice_id")),
        refs=refs(order_id, capture_id),
        link_refs=refs(capture_id),
        **_money(mapping(r, "amount")),
        capture_dedup=dedup,
    )


def _read_refund(paypal_type: str, r: Mapping[str, Any]) -> _Facts:
    """A refund of a capture: the total refunded from the capture so far when PayPal gives it,
    else this refund's own amount (counted once under its id)."""
    breakdown = mapping(r, "seller_payable_breakdown")
    total = mapping(breakdown, "total_refunded_amount")
    money = _money(total) if total else _money(mapping(r, "amount"))
    amount = money["amount"]
    refund = None
    if amount is not None:
        refund = Refund(amount) if total else Refund(amount, string(r, "id") or "refund")
    return _Facts(
        tx_id=tx_id(r.get("custom_id")) or tx_id(r.get("invoice_id")),
        refs=refs(_capture_of(r), r.get("id")),
        **money,
        refund=refund,
    )


def _read_dispute(paypal_type: str, r: Mapping[str, Any]) -> _Facts:
    disputed = first(r.get("disputed_transactions"))
    return _Facts(
        tx_id=tx_id(disputed.get("custom")) or tx_id(disputed.get("invoice_number")),
        refs=refs(disputed.get("seller_transaction_id")),
        **_money(mapping(r, "dispute_amount")),
    )


def _read_sale(paypal_type: str, r: Mapping[str, Any]) -> _Facts:
    agreement = string(r, "billing_agreement_id")
    amount = mapping(r, "amount")
    return _Facts(
        tx_id=tx_id(r.get("custom")),
        refs=refs(agreement, r.get("id")),
        subscription_ref=agreement,
        **_money({"value": amount.get("total"), "currency_code": amount.get("currency")}),
    )


def _read_subscription(paypal_type: str, r: Mapping[str, Any]) -> _Facts:
    subscription_id = string(r, "id")
    billing = mapping(r, "billing_info")
    last = mapping(mapping(billing, "last_payment"), "amount")
    return _Facts(
        tx_id=tx_id(r.get("custom_id")),
        refs=refs(subscription_id),
        subscription_ref=subscription_id,
        subscription_status=string(r, "status"),
        period_end_ms=_time_ms(billing.get("next_billing_time")),
        **(_money(last) if last else {"amount": None, "currency": None, "unreadable": None}),
    )


def _read_other(paypal_type: str, r: Mapping[str, Any]) -> _Facts:
    return _Facts(refs=refs(r.get("id")))


Reader = Callable[[str, Mapping[str, Any]], _Facts]

# The resource an event type carries, by the longest matching prefix (``resource_type`` says
# the same, but the event type is what PayPal documents per event).
_READERS: tuple[tuple[str, Reader], ...] = (
    ("PAYMENT.CAPTURE.REFUNDED", _read_refund),
    ("PAYMENT.CAPTURE.REVERSED", _read_refund),
    ("PAYMENT.CAPTURE.", _read_capture),
    ("CHECKOUT.", _read_order),
    ("CUSTOMER.DISPUTE.", _read_dispute),
    ("PAYMENT.SALE.", _read_sale),
    ("BILLING.SUBSCRIPTION.", _read_subscription),
)


def _reader(paypal_type: str) -> Reader:
    return next((read for prefix, read in _READERS if paypal_type.startswith(prefix)), _read_other)


# --- PayPal's own shapes of JSON values (edge.providers.reading reads the rest) ---------


def _capture_of(refund: Mapping[str, Any]) -> str | None:
    """The capture a refund or reversal belongs to: its ``up`` link ends with the capture id."""
    links = refund.get("links")
    for item in links if isinstance(links, list) else ():
        href = item.get("href") if isinstance(item, dict) else None
        if item.get("rel") == "up" and isinstance(href, str) and "/captures/" in href:
            return href.rstrip("/").rsplit("/", 1)[-1] or None
    return None


def _money(amount: Mapping[str, Any]) -> dict[str, Any]:
    """``node_money`` of a PayPal ``{currency_code, value}``."""
    value, currency = amount.get("value"), amount.get("currency_code")
    return node_money(value, currency, from_paypal(value, currency))


def _time_ms(value: Any) -> int | None:
    """Milliseconds of a PayPal RFC 3339 time (``2026-11-23T10:00:00Z``)."""
    if not isinstance(value, str) or len(value) > 40:
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        return None
    return int(moment.timestamp() * 1000)
