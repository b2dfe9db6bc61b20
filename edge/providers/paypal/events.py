"""PayPal events in the node's terms (CONTRACT 6, PROVIDERS.md "Event mapping"): the table and a
reader per resource kind (order, capture, refund, dispute, sale, subscription).

``EVENT_TABLE`` says what an event *means*; the readers say what it *refers to*: the node's
transaction id (``custom_id`` / ``invoice_id`` / ``custom``, which the node set to it), PayPal
ids to match and link, amount and subscription. Types not in the table are stored as history
(``UNMATCHED``, no status move) and answered 200, so PayPal does not retry them for ever.

What shapes the table:
- An approved order is not paid: the node must capture it, so ``CHECKOUT.ORDER.APPROVED`` asks
  for a durable capture follow-up and moves no status.
- One PayPal object in one state is one change, whichever way the node learns it (its webhook,
  the answer to the node's own call, or reading the object: ``edge.providers.paypal.sync``):
  each reader names it by a dedup id shared by all three (``capture:{id}:{status}``,
  ``refund:{id}:{status}``, ``dispute:{id}:{state}``, ``order:{id}:APPROVED``,
  ``sale:{id}:COMPLETED``), so it is applied and counted once.
- A refund is one step of its own (``Refund(amount, of=refund id)``): the node sums refunds
  against what was charged, each named refund once. PayPal's published Payments v2 webhooks
  (https://developer.paypal.com/api/rest/webhooks/event-names/#payments-v2,
  https://docs.paypal.ai/reference/webhook-events/payments-v2) are ``PAYMENT.CAPTURE.
  {DECLINED, COMPLETED, PENDING, REFUNDED, REVERSED}`` and two authorization events: a refund
  that stays pending or fails has **no event of its own**. The node learns those from its
  refund call's answer and by reading the refund (``GET /v2/payments/refunds/{id}``, statuses
  ``COMPLETED|PENDING|CANCELLED|FAILED``, payments_payment_v2.json ``refund_status``); a refund
  resource that says ``FAILED`` or ``CANCELLED`` is read as ``payment.refund_failed``
  wherever it is seen.
- ``PAYMENT.CAPTURE.REVERSED`` ("PayPal reverses a payment capture") carries a refund resource
  (``resource_type: refund``, with its own id and amount: the 2018 live sample quoted in
  lat9/paypalr ``Webhooks/Events/PaymentCaptureReversed.php``): it gives money back like a
  refund, under the reversal's id.
- Disputes (customer_disputes_v1.json ``dispute``; events ``CUSTOMER.DISPUTE.CREATED``,
  ``.UPDATED``, ``.RESOLVED``, https://developer.paypal.com/docs/disputes/webhooks) are read by
  what the dispute *is now* (``dispute_state``), whichever event carries it: still an inquiry
  (``dispute_life_cycle_stage: INQUIRY``: buyer and merchant talk, nothing is taken yet) is a
  warning (``payment.dispute_warning``); a claim (``CHARGEBACK``, ``PRE_ARBITRATION``,
  ``ARBITRATION``, "a customer or merchant escalates an inquiry to a claim",
  https://developer.paypal.com/docs/disputes/disputes-reference) is ``payment.disputed``;
  resolved, it is closed won or lost by ``dispute_outcome.outcome_code``, and a lost one gives
  back ``dispute_outcome.amount_refunded`` (a partial dispute moves only its amount) under the
  dispute's id. A dispute resolved *while still an inquiry* was never opened as a dispute, so
  its closing has no payment target: the spec says PayPal settles an inquiry by a refund
  ("If the customer accepts the offer, PayPal automatically makes a refund", ``make-offer``),
  which PayPal reports as a refund of its own; counting the closing too would count that money
  twice, and waiting for an opening would wait for ever. It is history with a flag.
- A subscription's sale does not say whether it is the first: each one asks to start the
  subscription, and the fold (edge.domain.convergence) lets the earliest start it; the others
  are renewals (``change``: the sale id), whatever order they arrive in.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from edge.domain import attention
from edge.domain.convergence import Refund
from edge.domain.events import EventType
from edge.domain.status import Status
from edge.providers.base import (
    REFUND_FAILED,
    REFUND_PENDING,
    REFUND_SUCCEEDED,
    FollowUp,
    MalformedPayload,
    NormalizedEvent,
    ProviderRefund,
)
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

# What a dispute is now (``dispute_state``): the variant of every CUSTOMER.DISPUTE.* event.
INQUIRY = "inquiry"  # open, still an inquiry: a chargeback may follow
CLAIM = "claim"  # open, escalated to PayPal (or opened as a claim)
WON = "won"  # resolved for the merchant after a claim
LOST = "lost"  # resolved for the buyer after a claim: money went back
INQUIRY_WON = "inquiry_won"  # resolved while still an inquiry, the merchant keeps the money
INQUIRY_LOST = "inquiry_lost"  # resolved while still an inquiry, the buyer was refunded
FAILED = "failed"  # the variant of a refund resource that failed or was cancelled
# the variant of a refund still pending (an eCheck's): no row, history; its amount stays held
# by the node's refund record until PayPal says it completed or failed
PENDING = "pending"

Row = tuple[EventType, Status | None, Status | str | None]

_DISPUTE_ROWS: Mapping[str, Row] = {
    INQUIRY: (E.PAYMENT_DISPUTE_WARNING, None, None),
    CLAIM: (E.PAYMENT_DISPUTED, S.DISPUTED, None),
    WON: (E.PAYMENT_DISPUTE_CLOSED, S.SUCCEEDED, None),
    LOST: (E.PAYMENT_DISPUTE_CLOSED, S.REFUNDED, None),
    INQUIRY_WON: (E.PAYMENT_DISPUTE_CLOSED, None, None),
    INQUIRY_LOST: (E.PAYMENT_DISPUTE_CLOSED, None, None),
}
DISPUTE_EVENT_TYPES = (
    "CUSTOMER.DISPUTE.CREATED",
    "CUSTOMER.DISPUTE.UPDATED",
    "CUSTOMER.DISPUTE.RESOLVED",
)

# (PayPal event type, variant) -> (normalized type, payment target, subscription target); the
# variant is "" unless VARIANTS has a function for the type.
EVENT_TABLE: Mapping[tuple[str, str], Row] = {
    ("CHECKOUT.ORDER.APPROVED", ""): (E.PAYMENT_PROCESSING, None, None),
    ("CHECKOUT.PAYMENT-APPROVAL.REVERSED", ""): (E.PAYMENT_FAILED, S.FAILED, None),
    ("PAYMENT.CAPTURE.COMPLETED", ""): (E.PAYMENT_SUCCEEDED, S.SUCCEEDED, None),
    ("PAYMENT.CAPTURE.PENDING", ""): (E.PAYMENT_PROCESSING, S.PROCESSING, None),
    ("PAYMENT.CAPTURE.DECLINED", ""): (E.PAYMENT_FAILED, S.FAILED, None),
    ("PAYMENT.CAPTURE.DENIED", ""): (E.PAYMENT_FAILED, S.FAILED, None),
    ("PAYMENT.CAPTURE.REFUNDED", ""): (E.PAYMENT_REFUNDED, S.REFUNDED, None),
    ("PAYMENT.CAPTURE.REFUNDED", FAILED): (E.PAYMENT_REFUND_FAILED, None, None),
    ("PAYMENT.CAPTURE.REFUNDED", PENDING): (E.UNMATCHED, None, None),  # history, as asked
    ("PAYMENT.CAPTURE.REVERSED", ""): (E.PAYMENT_REFUNDED, S.REFUNDED, None),
    **{(kind, state): row for kind in DISPUTE_EVENT_TYPES for state, row in _DISPUTE_ROWS.items()},
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

# A refund's status (payments_payment_v2 ``refund_status``) as the node counts it.
REFUND_STATES: Mapping[str, str] = {
    "COMPLETED": REFUND_SUCCEEDED,
    "PENDING": REFUND_PENDING,
    "CANCELLED": REFUND_FAILED,
    "FAILED": REFUND_FAILED,
}

# What the merchant is told a dispute needs (edge.domain.attention), by what it is now.
_DISPUTE_FLAGS: Mapping[str, str] = {
    INQUIRY: attention.DISPUTE_WARNING,
    CLAIM: attention.DISPUTED,
    WON: attention.DISPUTE_WON,
    LOST: attention.DISPUTE_LOST,
    INQUIRY_WON: attention.DISPUTE_WON,
    INQUIRY_LOST: attention.DISPUTE_LOST,
}


def dispute_state(dispute: Mapping[str, Any]) -> str:
    """What a dispute is now: open (``INQUIRY`` or ``CLAIM``), or resolved (``WON``, ``LOST``,
    ``INQUIRY_WON``, ``INQUIRY_LOST``); "" when it is resolved with an outcome the node does not
    know. A dispute that names no stage is taken for a claim (PayPal's stage field came later
    than its events; a merchant who opted out of inquiries gets every dispute as a claim)."""
    outcome = string(mapping(dispute, "dispute_outcome"), "outcome_code")
    inquiry = dispute.get("dispute_life_cycle_stage") == "INQUIRY"
    if dispute.get("status") != "RESOLVED" and outcome is None:
        return INQUIRY if inquiry else CLAIM
    if outcome in DISPUTE_WON:
        return INQUIRY_WON if inquiry else WON
    if outcome in DISPUTE_LOST:
        return INQUIRY_LOST if inquiry else LOST
    return ""


def _refund_variant(refund: Mapping[str, Any]) -> str:
    state = REFUND_STATES.get(string(refund, "status") or "")
    return FAILED if state == REFUND_FAILED else PENDING if state == REFUND_PENDING else ""


VARIANTS: Mapping[str, Callable[[Mapping[str, Any]], str]] = {
    **{kind: dispute_state for kind in DISPUTE_EVENT_TYPES},
    "PAYMENT.CAPTURE.REFUNDED": _refund_variant,
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
# A capture refunded since (in part or in all) was completed first: read, it is that success.
_CAPTURE_WAS = {"PARTIALLY_REFUNDED": "COMPLETED", "REFUNDED": "COMPLETED"}

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
    provider_refund: ProviderRefund | None = None
    shared_dedup: str | None = None  # the object in this state, however the node learns it
    follow_ups: tuple[FollowUp, ...] = ()
    change: str | None = None
    attention: str | None = None


def normalize(body: bytes) -> NormalizedEvent:
    """The ``NormalizedEvent`` of a verified PayPal event; ``MalformedPayload`` when the body is
    not JSON or lacks ``id``, ``event_type`` or ``resource``. Never raises otherwise."""
    event = json_object(body)
    event_id, paypal_type = string(event, "id"), string(event, "event_type")
    resource = event.get("resource")
    if not event_id or not paypal_type or not isinstance(resource, dict):
        raise MalformedPayload("A PayPal event needs id, event_type and resource.")
    return resource_event(
        paypal_type, resource, event_id=event_id, occurred_at_ms=time_ms(event.get("create_time"))
    )


def resource_event(
    paypal_type: str,
    resource: Mapping[str, Any],
    *,
    event_id: str | None = None,
    occurred_at_ms: int | None = None,
    provider_type: str | None = None,
) -> NormalizedEvent:
    """What ``resource`` says when PayPal reports it as ``paypal_type``: by a webhook (its
    ``event_id``), or read by the node (no event id: the event is named by the object and its
    state alone, the dedup id a webhook of the same change carries too)."""
    _, row = look_up(EVENT_TABLE, VARIANTS, paypal_type, resource)
    event_type, payment_target, subscription_target = row or (E.UNMATCHED, None, None)
    facts = _reader(paypal_type)(paypal_type, resource)
    if subscription_target == FROM_RESOURCE:
        subscription_target = SUBSCRIPTION_STATUS.get(facts.subscription_status or "")
    sale = paypal_type == "PAYMENT.SALE.COMPLETED" and row is not None
    dedup_ids = tuple(dict.fromkeys(d for d in (event_id, facts.shared_dedup) if d))
    if not dedup_ids:
        raise MalformedPayload(f"A {paypal_type} read from PayPal names no object.")
    return NormalizedEvent(
        provider_event_id=dedup_ids[0],
        type=event_type,
        provider_type=provider_type or paypal_type,
        occurred_at_ms=occurred_at_ms,
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
        refund=facts.refund if row is not None else None,
        dedup_ids=dedup_ids,
        follow_ups=facts.follow_ups if paypal_type == "CHECKOUT.ORDER.APPROVED" else (),
        attention=facts.attention if row is not None else None,
        provider_refund=facts.provider_refund,
        change=facts.change if row is not None else None,
    )


def capture_event(order: Mapping[str, Any]) -> NormalizedEvent | None:
    """The event a capture's answer (an order with its capture) stands for: the same facts
    and the same dedup id as the capture's own webhook, so whichever comes second is a
    duplicate. None when the answer holds no capture in a status the node knows."""
    unit = first(order.get("purchase_units"))
    capture = first(mapping(unit, "payments").get("captures"))
    return capture_outcome(order, capture)


def capture_outcome(
    order: Mapping[str, Any], capture: Mapping[str, Any], how: str = "capture answer"
) -> NormalizedEvent | None:
    """The event ``capture`` (one of ``order``'s) stands for: its success, pending or failure,
    under the dedup id its webhook carries too (a capture refunded since was a success first);
    ``how`` the node learned it (the provider type it is stored with). None when it is in no
    status the node knows."""
    status = string(capture, "status") or ""
    status = _CAPTURE_WAS.get(status, status)
    outcome = CAPTURE_OUTCOMES.get(status)
    capture_id = string(capture, "id")
    if outcome is None or capture_id is None:
        return None
    unit = first(order.get("purchase_units"))
    facts = _read_capture(f"PAYMENT.CAPTURE.{status}", {**capture, "status": status})
    event_type, target = outcome
    dedup = facts.shared_dedup or f"capture:{capture_id}:{status}"
    return NormalizedEvent(
        provider_event_id=dedup,
        type=event_type,
        provider_type=f"{how} {status}",
        occurred_at_ms=time_ms(capture.get("update_time") or capture.get("create_time")),
        tx_id=facts.tx_id or tx_id(unit.get("custom_id")),
        refs=(*facts.refs, *refs(order.get("id"))),
        link_refs=facts.link_refs,
        payment_status=target,
        amount_minor=facts.amount,
        currency=facts.currency,
        unreadable_amount=facts.unreadable,
        dedup_ids=(dedup,),
    )


def captures(order: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """Every capture of an order (``GET /v2/checkout/orders/{id}``), purchase unit by unit."""
    return _payments(order, "captures")


def order_refunds(order: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """Every refund an order shows (``purchase_units[].payments.refunds``)."""
    return _payments(order, "refunds")


def first_capture(order: Mapping[str, Any]) -> str | None:
    """The id of an order's (first) capture, from ``GET /v2/checkout/orders/{id}``."""
    found = captures(order)
    return string(found[0], "id") if found else None


def provider_refund(refund: Mapping[str, Any]) -> ProviderRefund | None:
    """A refund resource (payments_payment_v2 ``refund``) as the node keeps it: its status
    mapped (``REFUND_STATES``; a status PayPal has not documented is taken as pending: the money
    may be on its way), ``custom_id`` the tag, ``create_time`` in ms, ``status_details.reason``
    the detail; None without an id."""
    refund_id = string(refund, "id")
    if refund_id is None:
        return None
    status = string(refund, "status") or ""
    money = _money(mapping(refund, "amount"))
    reason = string(mapping(refund, "status_details"), "reason")
    return ProviderRefund(
        id=refund_id,
        amount_minor=money["amount"],
        state=REFUND_STATES.get(status, REFUND_PENDING),
        created_ms=time_ms(refund.get("create_time")),
        tag=string(refund, "custom_id"),
        detail=reason or "",  # why it is pending or failed (``ECHECK``), when PayPal says
    )


# --- readers, one per resource kind ------------------------------------------------------


def _read_order(paypal_type: str, r: Mapping[str, Any]) -> _Facts:
    unit = first(r.get("purchase_units"))
    order_id = string(r, "id")
    # the approval itself (the order shows APPROVED in its reversal's body too)
    approved = (
        paypal_type == "CHECKOUT.ORDER.APPROVED"
        and order_id is not None
        and r.get("status") == "APPROVED"
    )
    return _Facts(
        tx_id=tx_id(unit.get("custom_id")) or tx_id(unit.get("invoice_id")),
        refs=refs(order_id),
        **_money(mapping(unit, "amount")),
        follow_ups=(FollowUp(CAPTURE, {"orderId": order_id}),) if approved else (),
        shared_dedup=f"order:{order_id}:APPROVED" if approved else None,
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
        shared_dedup=dedup,
    )


def _read_refund(paypal_type: str, r: Mapping[str, Any]) -> _Facts:
    """A refund (or a reversal) of a capture: this refund's own amount, counted once under its
    id (``Refund(amount, of=id)``). One without an id (PayPal always gives one) falls back to
    the total refunded from the capture so far."""
    refund_id, status = string(r, "id"), string(r, "status") or "COMPLETED"
    money = _money(mapping(r, "amount"))
    # one still pending (what asking reads of an eCheck's refund) gave nothing back yet
    pending = paypal_type == "PAYMENT.CAPTURE.REFUNDED" and _refund_variant(r) == PENDING
    refund = None
    if refund_id is not None and money["amount"] is not None:
        refund = Refund(money["amount"], refund_id)
    elif refund_id is None:
        total = mapping(mapping(r, "seller_payable_breakdown"), "total_refunded_amount")
        money = _money(total)
        refund = Refund(money["amount"]) if money["amount"] is not None else None
    # only a refund can fail (a reversal is PayPal's own act, done when it is reported)
    failed = paypal_type == "PAYMENT.CAPTURE.REFUNDED" and _refund_variant(r) == FAILED
    return _Facts(
        # the node tags its refunds with its refund id: custom_id names a transaction only on
        # a refund made elsewhere that copied the capture's
        tx_id=tx_id(r.get("custom_id")) or tx_id(r.get("invoice_id")),
        refs=refs(_capture_of(r), refund_id),
        **money,
        refund=None if pending else refund,
        provider_refund=provider_refund(r) if paypal_type == "PAYMENT.CAPTURE.REFUNDED" else None,
        shared_dedup=f"refund:{refund_id}:{status}" if refund_id else None,
        change=refund_id if failed else None,
        attention=attention.REFUND_FAILED if failed else None,
    )


def _read_dispute(paypal_type: str, r: Mapping[str, Any]) -> _Facts:
    """A dispute, by what it is now (``dispute_state``): named by its id (``change``), its
    amount the disputed one, or, lost, what went back to the buyer."""
    disputed = first(r.get("disputed_transactions"))
    dispute_id = string(r, "dispute_id")
    state = dispute_state(r)
    money = _money(mapping(r, "dispute_amount"))
    refund = None
    if state == LOST:
        back = mapping(mapping(r, "dispute_outcome"), "amount_refunded")
        money = _money(back) if back else money
        if money["amount"] is not None and dispute_id is not None:
            refund = Refund(money["amount"], dispute_id)
    return _Facts(
        tx_id=tx_id(disputed.get("custom")) or tx_id(disputed.get("invoice_number")),
        refs=refs(disputed.get("seller_transaction_id")),
        **money,
        refund=refund,
        shared_dedup=f"dispute:{dispute_id}:{state}" if dispute_id and state else None,
        change=dispute_id,
        attention=_DISPUTE_FLAGS.get(state),
    )


def _read_sale(paypal_type: str, r: Mapping[str, Any]) -> _Facts:
    agreement, sale_id = string(r, "billing_agreement_id"), string(r, "id")
    amount = mapping(r, "amount")
    completed = paypal_type == "PAYMENT.SALE.COMPLETED" and sale_id is not None
    return _Facts(
        tx_id=tx_id(r.get("custom")),
        refs=refs(agreement, sale_id),
        subscription_ref=agreement,
        **_money({"value": amount.get("total"), "currency_code": amount.get("currency")}),
        shared_dedup=f"sale:{sale_id}:COMPLETED" if completed else None,
        change=sale_id,
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
        period_end_ms=time_ms(billing.get("next_billing_time")),
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


def _payments(order: Mapping[str, Any], kind: str) -> list[Mapping[str, Any]]:
    units = order.get("purchase_units")
    found: list[Mapping[str, Any]] = []
    for unit in units if isinstance(units, list) else ():
        items = mapping(unit, "payments").get(kind) if isinstance(unit, dict) else None
        found += (
            [item for item in items if isinstance(item, dict)] if isinstance(items, list) else []
        )
    return found


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


def time_ms(value: Any) -> int | None:
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
