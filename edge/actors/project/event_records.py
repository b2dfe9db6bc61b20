"""What a provider's event says about its transaction, and what is kept of it: pure functions
of the event, the transaction record and its story, with no store and no actor (the walk that
uses them is ``edge.actors.project.applying``).

- what an adapter's reading may hold (``normalized``, ``bounded``: a body that does not fit is
  the sender's fault, refused for good);
- the step of the story an event asks for (``entry``; ``waiting_entry`` for one that waited
  unmatched, from what was stored of it: ``match_record``);
- money that is not what the transaction asked (``mismatched``), money come late
  (``late_money``), the flags a money event raises (``money_flags``);
- one change, one event (``change``, ``refund_change``, ``waited_change``:
  ``edge.domain.changes``), and what a stored event is called (``stored_type``,
  ``status_after``).
"""

from __future__ import annotations

from typing import Any

from edge.actors.project import story
from edge.domain import attention
from edge.domain.changes import (
    by_subscription_status,
    change_key,
    remember,
    tell_subscription_change,
)
from edge.domain.convergence import Refund, Step
from edge.domain.events import EventType
from edge.domain.inputs import first_flaw, is_text
from edge.domain.money import MAX_MINOR
from edge.domain.paid import paid_as_asked
from edge.domain.status import Status
from edge.providers.base import MalformedPayload, NormalizedEvent, Provider


def pays(event: NormalizedEvent) -> bool:
    """Does the event report money paid for the checkout, or ask the node to take it (PayPal's
    approved order, to capture)? A dispute's closing reports no payment."""
    if event.type is EventType.PAYMENT_DISPUTE_CLOSED:
        return False
    return (
        event.payment_status in (Status.SUCCEEDED, Status.PROCESSING)
        or event.starts_subscription
        or bool(event.follow_ups)
    )


def mismatched(event: NormalizedEvent, tx: dict[str, Any]) -> bool:
    """Money reported for ``tx`` that is not what it asked: it must not complete it."""
    return (
        pays(event)
        and event.states_amount
        and not paid_as_asked(tx["amount"], tx["currency"], event.amount_minor, event.currency)
    )


def waited_mismatched(waited: dict[str, Any], tx: dict[str, Any]) -> bool:
    """``mismatched`` for an event that waited unmatched, from what was stored of it."""
    stated = waited.get("amount") is not None or waited.get("providerAmount") is not None
    return (
        bool(waited["match"].get("pays"))
        and stated
        and not paid_as_asked(
            tx["amount"], tx["currency"], waited.get("amount"), waited.get("currency")
        )
    )


def mismatch_flag(event: dict[str, Any]) -> dict[str, Any]:
    return {
        "code": "amount_mismatch",
        "eventId": event["id"],
        "amount": event.get("amount"),
        "currency": event.get("currency"),
        "providerAmount": event.get("providerAmount"),
        "expectedAmount": event["expectedAmount"],
        "expectedCurrency": event["expectedCurrency"],
    }


_LAST_REFUND = "refund:last"  # the change that last added to the money given back
_MONEY_FLAGS = {
    EventType.PAYMENT_REFUND_FAILED: attention.REFUND_FAILED,
    EventType.PAYMENT_DISPUTE_WARNING: attention.DISPUTE_WARNING,
    EventType.PAYMENT_DISPUTED: attention.DISPUTED,
}


def change(
    tx: dict[str, Any],
    stored_type: EventType,
    event: NormalizedEvent,
    evt_id: str,
    sub: dict[str, Any] | None,
    given_back_before: int,
    run: story.SubRun | None = None,
) -> tuple[str | None, bool]:
    """(the event that already told this change, or None; whether ``tx`` changed): one change,
    one event (``edge.domain.changes``). A refund is a change when it adds to the money the
    provider reports given back, whatever the events that report it (Stripe's refund events
    and ``charge.refunded``, a sync and a late webhook)."""
    refund_types = (EventType.PAYMENT_REFUNDED, EventType.PAYMENT_PARTIALLY_REFUNDED)
    if stored_type in refund_types and event.refund is not None:
        after = story.reported(tx).given_back
        first = refund_change(tx, evt_id, given_back_before, after)
        return first, first is None
    stated = event.states_amount
    target = event.subscription_status
    if target and by_subscription_status(stored_type, event.change):
        if run is not None:
            return _run_told(tx, evt_id, target, run)
        first = _current_teller(tx, sub)
        if first is not None:
            return first, False
    sub_status, sub_version = _not_applied(target, sub)
    key = change_key(
        stored_type,
        named=event.change,
        refund_of=event.refund.of if event.refund else None,
        amount=event.amount_minor if stated else tx.get("amount"),
        currency=event.currency if stated else tx.get("currency"),
        sub_status=sub_status,
        sub_version=sub_version,
        moves=_moves(event.payment_status, event.subscription_status, event.starts_subscription),
    )
    if key is None:
        return None, False
    first = _remember(tx, key, evt_id)
    return first, first is None


def refund_change(tx: dict[str, Any], evt_id: str, before: int, after: int) -> str | None:
    """A refund event is a change when it adds to the money given back (``before`` ->
    ``after``); else the repeat of the refund change told last (its id returned)."""
    if after <= before:
        return (tx.get("changes") or {}).get(_LAST_REFUND)
    tx.setdefault("changes", {})[_LAST_REFUND] = evt_id
    _remember(tx, f"refund:{after}", evt_id)
    return None


def _remember(tx: dict[str, Any], key: str, evt_id: str) -> str | None:
    return remember(tx.setdefault("changes", {}), key, evt_id)


def waited_change(
    tx: dict[str, Any],
    kind: EventType,
    match: dict[str, Any],
    event: dict[str, Any],
    sub: dict[str, Any] | None,
    run: story.SubRun | None = None,
) -> str | None:
    """``change`` for an event that waited unmatched, from what was stored of it."""
    target = match.get("subscription")
    if target and by_subscription_status(kind, match.get("change")):
        if run is not None:
            return _run_told(tx, event["id"], target, run)[0]
        first = _current_teller(tx, sub)
        if first is not None:
            return first
    refund = match.get("refund")
    sub_status, sub_version = _not_applied(target, sub)
    key = change_key(
        kind,
        named=match.get("change"),
        refund_of=refund[1] if refund else None,
        amount=event.get("amount"),
        currency=event.get("currency"),
        sub_status=sub_status,
        sub_version=sub_version,
        moves=_moves(match.get("payment"), target, bool(match.get("starts"))),
    )
    return _remember(tx, key, event["id"]) if key is not None else None


def _run_told(
    tx: dict[str, Any], evt_id: str, target: str, run: story.SubRun
) -> tuple[str | None, bool]:
    """``change`` for a subscription's status change the fold applied: the step of its run
    (the tellings of that change, whatever their dates and ids) that told it already, or
    ``evt_id``, which tells it now. A key made of the status and its version alone would name
    another change once a late step moves the versions after it (a cancel keyed
    ``canceled@3`` is ``canceled@4`` once an earlier renewal is folded in)."""
    first = story.run_teller(tx, run, target, evt_id, adopter=evt_id)
    if first is not None:
        return first, story.adopted_by(tx, first) == evt_id  # kept on the record if adopted
    tell_subscription_change(tx.setdefault("changes", {}), target, run.version, evt_id)
    return None, True


def _current_teller(tx: dict[str, Any], sub: dict[str, Any] | None) -> str | None:
    """What a subscription status change the fold did not apply (held, or never possible)
    repeats: the change the subscription is in, by whichever of its tellings told it, as the
    story now is (a key of the status and version as they are would name another change once
    a late step moved the version). Held and applied later, it is told then if its own change
    was told by none (``story._untold``)."""
    if sub is None:
        return None
    current = story.current_run(tx)
    return story.run_teller(tx, current, sub["status"]) if current is not None else None


def _not_applied(target: object, sub: dict[str, Any] | None) -> tuple[str | None, int | None]:
    """The status and version a subscription status change the fold did not apply is keyed
    by: the subscription as it is; before it started (PayPal's BILLING.SUBSCRIPTION.ACTIVATED
    before the sale that starts it), the status it will start with, at version 1."""
    if not target:
        return None, None
    return (sub["status"], sub["version"]) if sub else (str(target), 1)


def _moves(payment: object, subscription: object, starts: bool) -> bool:
    """Does the event ask for a status move (of the payment or its subscription)?"""
    return payment is not None or subscription is not None or starts


def asked_learned(tx: dict[str, Any], now: int) -> None:
    """Asking the provider (a sync, a walk of its lists) told a change of ``tx`` that no
    webhook had brought: counted on the transaction (``asked``), for the merchant's eyes."""
    asked = tx.setdefault("asked", {"at": now, "found": True, "learned": 0})
    asked["learned"] = int(asked.get("learned", 0)) + 1
    asked.pop("webhookAt", None)  # learned again by asking: the webhooks stopped again


def webhook_followed(tx: dict[str, Any], now: int) -> bool:
    """A webhook came for a change the node had learned by asking: the provider's webhooks do
    reach the node (late). True when ``tx`` changed."""
    asked = tx.get("asked")
    if not asked or not asked.get("learned") or asked.get("webhookAt"):
        return False
    asked["webhookAt"] = now
    return True


def late_money(tx: dict[str, Any], event: dict[str, Any]) -> dict[str, Any]:
    """The flag for money paid after the checkout ended, kept too as money a refund may give
    back (``tx["lateMoney"]``)."""
    amount = event.get("amount")
    if amount is not None and event.get("currency") == tx["currency"]:
        late = [m for m in tx.get("lateMoney") or () if m["eventId"] != event["id"]]
        tx["lateMoney"] = [*late, {"eventId": event["id"], "amount": amount}][-ATTENTION_MONEY:]
    return {
        "code": attention.PAID_LATE,
        "eventId": event["id"],
        "amount": amount,
        "currency": event.get("currency"),
    }


ATTENTION_MONEY = 20  # late payments remembered per transaction


def withdraw_late(tx: dict[str, Any], in_time: frozenset[str]) -> bool:
    """The events of ``in_time`` were found late and are not (``story.Settled.in_time``):
    their ``paid_late`` flags and late money go, and the transaction needs the merchant no
    more when nothing else is flagged. True when it changed."""
    flags = tx.get("attention") or []
    kept = [f for f in flags if f["code"] != attention.PAID_LATE or f.get("eventId") not in in_time]
    money = tx.get("lateMoney") or []
    left = [m for m in money if m["eventId"] not in in_time]
    if len(kept) == len(flags) and len(left) == len(money):
        return False
    tx["attention"], tx["lateMoney"] = kept, left
    if not kept:
        tx["needsAttention"] = False
    return True


def late_change(tx: dict[str, Any], event: dict[str, Any], named: str | None) -> str | None:
    """The event that told ``event``'s money as late (``payment.paid_late`` of the payment
    its adapter ``named``, or of its amount: one change, as ``change`` keys it for an event
    found late when it came), or None, when none did and ``event`` is kept as its telling now."""
    key = change_key(
        EventType.PAYMENT_PAID_LATE,
        named=named,
        amount=event.get("amount"),
        currency=event.get("currency"),
    )
    return _remember(tx, key, event["id"]) if key is not None else None


def money_flags(
    kind: EventType, event: NormalizedEvent, stored: dict[str, Any]
) -> list[dict[str, Any]]:
    """What a money event after the payment asks of the merchant (CONTRACT 4.3a): a refund
    that failed, a warning before a chargeback, a dispute opened, won or lost."""
    closing = (
        attention.DISPUTE_WON
        if event.payment_status == Status.SUCCEEDED
        else attention.DISPUTE_LOST
        if event.payment_status is not None
        else None
    )
    refund_id = event.provider_refund.tag if event.provider_refund else None
    return _flags_for(kind, event.type, closing, stored, refund_id)


def own_flag(event: NormalizedEvent, event_id: str) -> dict[str, Any]:
    """The event's own word for the merchant (``attention``), on the change ``event_id`` told;
    a refund's names the refund, as ``money_flags`` does: one flag for one failure."""
    return {
        "code": event.attention,
        "eventId": event_id,
        "refundId": event.provider_refund.tag if event.provider_refund else None,
    }


def waited_flags(
    kind: EventType, match: dict[str, Any], event: dict[str, Any]
) -> list[dict[str, Any]]:
    payment = match.get("payment")
    closing = (
        attention.DISPUTE_WON
        if payment == Status.SUCCEEDED
        else attention.DISPUTE_LOST
        if payment is not None
        else None
    )
    return _flags_for(kind, match.get("type"), closing, event, None)


def _flags_for(
    kind: EventType,
    own: str | None,
    closing: str | None,
    event: dict[str, Any],
    refund_id: str | None,
) -> list[dict[str, Any]]:
    """The flags of an event stored as ``kind`` whose adapter read it as ``own``: a dispute
    lost that gives money back, stored as the refund it makes, is the dispute's closing still."""
    if own == EventType.PAYMENT_DISPUTE_CLOSED and kind in REFUND_TYPES:
        kind = EventType.PAYMENT_DISPUTE_CLOSED
    code = closing if kind == EventType.PAYMENT_DISPUTE_CLOSED else _MONEY_FLAGS.get(kind)
    if code is None:
        return []
    return [
        {
            "code": code,
            "eventId": event["id"],
            "amount": event.get("amount"),
            "currency": event.get("currency"),
            "refundId": refund_id,
        }
    ]


REFUND_TYPES = (EventType.PAYMENT_REFUNDED, EventType.PAYMENT_PARTIALLY_REFUNDED)


def refund_type(target: Status | None) -> EventType:
    return (
        EventType.PAYMENT_REFUNDED
        if target == Status.REFUNDED
        else EventType.PAYMENT_PARTIALLY_REFUNDED
    )


def stored_type(
    event: NormalizedEvent,
    evt_id: str,
    tx: dict[str, Any] | None,
    settled: story.Settled | None,
    mismatched: bool,
    late: bool,
) -> EventType:
    if tx is None:
        return EventType.UNMATCHED
    if mismatched:
        return EventType.PAYMENT_AMOUNT_MISMATCH
    if late:
        return EventType.PAYMENT_PAID_LATE
    if settled is not None and evt_id in settled.targets:
        return refund_type(settled.targets[evt_id])
    return event.type


def entry(evt_id: str, event: NormalizedEvent, received_at: int) -> story.Entry | None:
    """The step of the story an event asks for; None when it asks for no move."""
    if (
        event.payment_status is None
        and event.subscription_status is None
        and not event.starts_subscription
        and event.refund is None
    ):
        return None
    step = Step(
        event_id=evt_id,
        at=event.occurred_at_ms if event.occurred_at_ms is not None else received_at,
        type=str(event.type),
        payment=event.payment_status,
        subscription=event.subscription_status,
        starts=event.starts_subscription,
        refund=event.refund,
        charged=event.charged_minor,
        change=event.change,
    )
    start = (
        {"ref": event.subscription_ref, "customer": event.provider_customer}
        if event.starts_subscription
        else None
    )
    return story.Entry(step, start, event.current_period_end_ms)


def match_record(event: NormalizedEvent) -> dict[str, Any]:
    """What an unmatched event keeps for the day a later event links one of its ids: the step
    it asks for, and whether it reports money paid (checked against the transaction then)."""
    refund = event.refund
    return {
        "type": str(event.type),
        "payment": event.payment_status,
        "subscription": event.subscription_status,
        "starts": event.starts_subscription,
        "start": {"ref": event.subscription_ref, "customer": event.provider_customer}
        if event.starts_subscription
        else None,
        "periodEnd": event.current_period_end_ms,
        "linkRefs": list(event.link_refs),
        "refund": [refund.amount, refund.of] if refund else None,
        "charged": event.charged_minor,
        "change": event.change,
        "pays": pays(event),
        "moves": entry("", event, 0) is not None,
        "attention": event.attention,  # the event's own word for the merchant, told once linked
    }


def waiting_entry(waited: dict[str, Any]) -> story.Entry | None:
    """The step of an event that waited unmatched, as it would have been had it matched at
    once; None when it asks for no move (a declined attempt: it only joins the history)."""
    match = waited["match"]
    if not match.get("moves", True):
        return None
    refund = match.get("refund")
    step = Step(
        event_id=waited["id"],
        at=waited["occurredAt"] if waited.get("occurredAt") is not None else waited["receivedAt"],
        type=match["type"],
        payment=Status(match["payment"]) if match.get("payment") else None,
        subscription=Status(match["subscription"]) if match.get("subscription") else None,
        starts=bool(match.get("starts")),
        refund=Refund(refund[0], refund[1]) if refund else None,
        charged=match.get("charged"),
        change=match.get("change"),
    )
    return story.Entry(step, match.get("start"), match.get("periodEnd"))


def status_after(
    event: NormalizedEvent, tx: dict[str, Any] | None, sub: dict[str, Any] | None
) -> str | None:
    if tx is None:
        return None
    if sub is not None and event.subscription_status is not None:
        return str(sub["status"])
    return str(tx["status"])


def normalized(provider: Provider, body: bytes, mode: str) -> NormalizedEvent:
    """The adapter's reading of a verified body. A body it cannot read (too deep, numbers that
    overflow a date) is the sender's fault, answered 400, never a fault of the node's."""
    try:
        return provider.normalize(body, mode)
    except MalformedPayload:
        raise
    except (ValueError, TypeError, KeyError, AttributeError, OverflowError, RecursionError) as exc:
        raise MalformedPayload(f"{provider.name} body not readable ({type(exc).__name__})") from exc


# Provider ids become store keys (LMDB keys stop at 511 bytes): a longer one is a malformed event,
# refused for good before it is written, never a failed commit that the provider would retry.
MAX_PROVIDER_ID = 255
LATEST_MS = 253_402_300_800_000  # 10000-01-01: past any date a provider could mean


def bounded(event: NormalizedEvent) -> NormalizedEvent:
    """``event`` if every value fits the store (CONTRACT 8); else ``MalformedPayload``."""
    named = (
        event.provider_event_id,
        event.provider_type,
        event.tx_id or "",
        event.subscription_ref or "",
        *event.dedup_ids,
        *event.refs,
        *event.link_refs,
    )
    for value in named:
        if len(value.encode("utf-8", "surrogatepass")) > MAX_PROVIDER_ID:
            raise MalformedPayload(f"an id of {len(value)} characters (at most {MAX_PROVIDER_ID})")
    texts = (*named, event.currency or "", event.customer_ref or "", event.provider_customer or "")
    # one encoding of all the texts at once finds a lone surrogate in any of them (two halves
    # in two texts stay two lone ones: joining never pairs them)
    if not is_text("".join(texts)) or (
        event.metadata and first_flaw(dict(event.metadata), 1) is not None
    ):
        raise MalformedPayload("text that is not valid Unicode")
    if event.amount_minor is not None and abs(event.amount_minor) > MAX_MINOR:
        raise MalformedPayload(f"an amount beyond {MAX_MINOR} minor units")
    for moment in (event.occurred_at_ms, event.current_period_end_ms):
        if moment is not None and not 0 <= moment < LATEST_MS:
            raise MalformedPayload("a timestamp outside any calendar")
    return event
