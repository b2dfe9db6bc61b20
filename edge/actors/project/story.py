"""A transaction's story: the steps its events asked for, kept on the record and folded again on
every event (edge.domain.convergence), so the outcome does not depend on delivery order.

The record keeps, per step, the event's id, time, normalized type, targets, its fate in the last
fold, and what a first payment needs to start the subscription. A step that the last fold held
and this one applies has its event's ``appliedAt`` set now; the record and its subscription take
the fold's statuses only when they lie ahead (a status never moves backwards); else the new step
is left out of the story and changes nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from edge.actors.project.ledger import Ledger
from edge.domain import ids
from edge.domain.changes import (
    by_subscription_status,
    remember,
    subscription_key,
    tell_subscription_change,
    told_subscription_changes,
)
from edge.domain.convergence import (
    START_RUN,
    Effect,
    Fate,
    Outcome,
    Refund,
    Start,
    Step,
    behind,
    fold,
)
from edge.domain.events import SOURCE_NODE, EventType
from edge.domain.refunds import Reported
from edge.domain.refunds import reported as refunds_reported
from edge.domain.status import ENDED, Kind, Status
from edge.store.engine import Op

# A record's story is bounded: a subscription adds a step or two a period, so this is decades;
# the oldest settled steps go first (they can no longer be reordered by anything that matters).
STORY_KEPT = 400

_FATES = {"a": Fate.APPLIED, "h": Fate.HELD, "i": Fate.IGNORED}
_CODES = {fate: code for code, fate in _FATES.items()}


@dataclass(slots=True)  # not frozen: made per request (docs/architecture.md)
class Entry:
    """One step of a story with what starting a subscription from it needs."""

    step: Step
    start: dict[str, Any] | None = None  # {ref, periodEnd, customer} of a starting payment
    period_end: int | None = None  # the subscription period end the event reported

    def stored(self, fate: Fate, run: SubRun | None = None) -> dict[str, Any]:
        s = self.step
        out: dict[str, Any] = {"e": s.event_id, "at": s.at, "t": s.type, "f": _CODES[fate]}
        if run is not None:  # its subscription part applied: where, and in which run
            out["sv"], out["ru"] = run.version, run.mover
        if s.payment:
            out["p"] = str(s.payment)
        if s.subscription:
            out["s"] = str(s.subscription)
        if s.starts:
            out["st"] = True
        if self.start:
            out["x"] = self.start
        if self.period_end is not None:
            out["pe"] = self.period_end
        if s.refund is not None:
            out["r"] = [s.refund.amount, s.refund.of]
        if s.charged is not None:
            out["c"] = s.charged
        if s.own:
            out["o"] = True
        if s.change is not None:
            out["n"] = s.change
        return out


def entry_of(stored: dict[str, Any]) -> Entry:
    step = Step(
        event_id=stored["e"],
        at=stored["at"],
        type=stored["t"],
        payment=Status(stored["p"]) if stored.get("p") else None,
        subscription=Status(stored["s"]) if stored.get("s") else None,
        starts=bool(stored.get("st")),
        refund=Refund(stored["r"][0], stored["r"][1]) if stored.get("r") else None,
        charged=stored.get("c"),
        own=bool(stored.get("o")),
        change=stored.get("n"),
    )
    return Entry(step, stored.get("x"), stored.get("pe"))


class SubRun(NamedTuple):
    """Where a step's subscription part applied: the subscription's version then, the step
    that moved it to that status (``Outcome.sub_runs``), and the story's steps in that run."""

    version: int
    mover: str
    members: tuple[str, ...] = ()


@dataclass
class Settled:
    """What a fold did: the new steps' fates, whether they were money for an ended checkout,
    the status each new refund asked for once its amount was counted, whether the story is
    contradicted (a success and an ending, or two endings), the kept steps that took effect
    once and are money for an ended checkout now that an end dated before them came, those
    found late once that the story now shows in time, and the record (and subscription) as
    they now are."""

    fates: dict[str, Fate]
    late: frozenset[str]
    sub: dict[str, Any] | None
    targets: dict[str, Status] = field(default_factory=dict)
    contradicted: bool = False
    overtaken: frozenset[str] = frozenset()
    in_time: frozenset[str] = frozenset()
    # the new steps whose subscription part applied: where (one change, one event)
    sub_runs: dict[str, SubRun] = field(default_factory=dict)
    # new tellings of a step the story has (the same effect) -> that step's event
    repeats: dict[str, str] = field(default_factory=dict)


def _start(tx: dict[str, Any], sub: dict[str, Any] | None) -> Start:
    """Where the story starts: pending at version 1 for a checkout made since stories were
    kept; where it stood for a record stored before."""
    base = tx.get("storyStart")
    if base is None:
        base = tx["storyStart"] = {
            "status": tx["status"],
            "version": tx["version"],
            "sub": sub["status"] if sub else None,
            "subVersion": sub["version"] if sub else 0,
        }
        tx["story"] = []
    return Start(
        Status(base["status"]),
        base["version"],
        Status(base["sub"]) if base.get("sub") else None,
        base.get("subVersion", 0),
        base.get("refunded", 0),
        tuple((of, amount) for of, amount in base.get("refunds", ())),
        base.get("charged"),
        tuple(base.get("disputed", ())),
    )


async def settle(
    ledger: Ledger, tx: dict[str, Any], new: Sequence[Entry], ops: list[Op]
) -> Settled:
    """Fold ``tx``'s story with the ``new`` entries and take the outcome if it lies ahead.

    ``ops`` gets the writes: the record, its subscription, and the ``appliedAt`` of earlier
    events that took effect now. A step the story already has (the same effect at the same
    time, under another event id) is not added again: it shares that step's fate."""
    sub = await ledger.subscription(tx["subscriptionId"]) if tx.get("subscriptionId") else None
    if tx.get("story") and new:
        repeated = _repeats(tx["story"], new)
        if repeated is not None:  # nothing new to fold: each shares its kept step's fate
            fates = {i: _FATES[stored["f"]] for i, stored in repeated.items()}
            ignored = {i for i, fate in fates.items() if fate is Fate.IGNORED}
            kept_of = {i: str(stored["e"]) for i, stored in repeated.items()}
            return Settled(fates, _late(new, tx) & ignored, sub, repeats=kept_of)
    start = _start(tx, sub)
    kept = [entry_of(e) for e in tx["story"]]
    before = {e["e"]: _FATES[e["f"]] for e in tx["story"]}
    known = {e.step.effect: e for e in kept}
    fresh: list[Entry] = []
    repeats: dict[str, str] = {}
    earlier = False  # a kept step of a named change now dated by an earlier telling of it
    for entry in new:
        first = known.setdefault(entry.step.effect, entry)
        if first is entry:
            fresh.append(entry)
            continue
        repeats[entry.step.event_id] = first.step.event_id
        if entry.step.at < first.step.at:
            # the change happened no later than its earliest telling, whichever came first
            # (CONTRACT 2: the same events, the same outcome, in any order)
            first.step.at = entry.step.at
            earlier = True
    standing = Start(
        Status(tx["status"]),
        tx["version"],
        Status(sub["status"]) if sub else None,
        sub["version"] if sub else 0,
    )
    subscription_checkout = tx["kind"] == Kind.SUBSCRIPTION
    outcome = (
        fold(
            [*(e.step for e in kept), *(e.step for e in fresh)],
            start,
            subscription_checkout,
            tx["amount"],
        )
        if fresh or earlier
        else None
    )
    if outcome is not None and not fresh and _moves(standing, outcome):
        # only a telling that dates a kept change earlier: it never moves the record to
        # another status by itself, since a repeat is told to no one (its story keeps the
        # date it has); the same status, reached in other steps, is taken, so the story
        # holds the earlier date (and the version its steps make) whichever telling came
        # first
        outcome = None
    if outcome is None or behind(standing, outcome):
        # nothing new, or taking it would move a status backwards: the new steps change
        # nothing (the story they contradict is still the merchant's to look at)
        fates = {e.step.event_id: Fate.IGNORED for e in fresh}
        fates.update({i: before.get(first, Fate.IGNORED) for i, first in repeats.items()})
        if outcome is not None and any(e.step.pays for e in fresh):
            # a provider's success the record cannot take (it had ended): left out of the
            # story, it still contradicts an ending the provider reports, told before or after
            tx["paidUntaken"] = True
        return Settled(
            fates,
            _late(new, tx) & {i for i, f in fates.items() if f is Fate.IGNORED},
            sub,
            contradicted=outcome is not None and _contradicted(tx, outcome, [*kept, *fresh]),
            repeats=repeats,
        )

    now = ledger.now_ms()
    entries = kept + fresh
    if outcome.status != tx["status"] or outcome.version > tx["version"]:
        # every status change moves the version on (CONTRACT 2), also where a late event
        # re-orders the story and the fold reaches another status in as many steps
        moved = outcome.status != tx["status"]
        tx["version"] = max(tx["version"] + moved, outcome.version)
        tx["status"] = str(outcome.status)
        tx["updatedAt"] = now
    if outcome.started_by is not None and sub is None:
        starter = next(e for e in entries if e.step.event_id == outcome.started_by)
        sub = _start_subscription(ledger, tx, starter, outcome)
        _follow(sub, outcome, entries, now)
        ops.extend(ledger.sub_ops(sub))
    elif sub is not None and _follow(sub, outcome, entries, now):
        ops.extend(ledger.sub_ops(sub))
    tx["story"] = _trimmed(tx, entries, outcome, start)
    for evt_id, fate in outcome.fates.items():
        if fate is Fate.APPLIED and before.get(evt_id) is Fate.HELD:
            ops.extend(await _applied_now(ledger, tx, evt_id, now, outcome.targets.get(evt_id)))
    for entry in _untold(tx, outcome, entries, {e.step.event_id for e in fresh}):
        ops.extend(await _told_now(ledger, tx, sub, entry, outcome))
    ops.extend(ledger.tx_ops(tx))
    fates = {e.step.event_id: outcome.fates[e.step.event_id] for e in fresh}
    fates.update({i: outcome.fates[first] for i, first in repeats.items()})
    late = {i for i in fates if i in outcome.late or repeats.get(i) in outcome.late}
    targets = {i: outcome.targets[i] for i in fates if i in outcome.targets}
    targets.update({i: outcome.targets[f] for i, f in repeats.items() if f in outcome.targets})
    runs = {i: run for i in fates if (run := _run(outcome, repeats.get(i, i), members=True))}
    # a payment the record took before the provider's end of the checkout, dated earlier,
    # came: late money, as it is when the end is delivered first
    overtaken = {i for i in outcome.late if before.get(i) is Fate.APPLIED}
    # and the other way: a payment found late that the story now takes (the end it came
    # after was re-dated after it, or was a provider's cancel its success voided)
    in_time = {
        i for i, f in outcome.fates.items() if f is Fate.APPLIED and before.get(i) is Fate.IGNORED
    }
    return Settled(
        fates,
        frozenset(late),
        sub,
        targets,
        _contradicted(tx, outcome, entries),
        frozenset(overtaken),
        frozenset(in_time),
        runs,
        repeats,
    )


def _run(outcome: Outcome, evt_id: str, members: bool = False) -> SubRun | None:
    """The step's ``SubRun`` in ``outcome`` (with the run's steps when ``members``)."""
    mover = outcome.sub_runs.get(evt_id)
    if mover is None:
        return None
    ids = tuple(i for i, r in outcome.sub_runs.items() if r == mover) if members else ()
    return SubRun(outcome.sub_versions[evt_id], mover, ids)


_ADOPTED = "adopted:"  # a ``changes`` key: the orphan (below) -> the event that adopted it


def run_teller(
    tx: dict[str, Any], run: SubRun, status: str, evt_id: str = "", adopter: str = ""
) -> str | None:
    """The event that told the change ``run`` is (the subscription's move to ``status``), but
    ``evt_id``; None when none did yet. With ``adopter``, a telling of that status that was
    told and that a step dated later has since left out of the story (a past due told, then a
    cancel dated before it) is that change's telling: the provider told it twice, at two
    dates around the cancel, and it is told once in any order. ``adopter`` repeats it."""
    changes = tx.get("changes") or {}
    told = told_subscription_changes(changes)
    first = next((i for i in run.members if i != evt_id and i in told), None)
    if first is not None:
        return first
    adopted = {by: key[len(_ADOPTED) :] for key, by in changes.items() if key.startswith(_ADOPTED)}
    first = next((adopted[i] for i in run.members if i in adopted), None)
    if first is None and run.mover.startswith(START_RUN):
        # its first tellings were folded into the story's start (``_trimmed``): the change
        # they told is kept under its status and version
        first = changes.get(subscription_key(status, run.version))
    if first is None and adopter:
        first = next(
            (
                e["e"]
                for e in tx.get("story") or ()
                if e["f"] == "i" and e.get("s") == status and e["e"] in told
                and f"{_ADOPTED}{e['e']}" not in changes
            ),
            None,
        )  # fmt: skip
        if first is not None:
            remember(tx.setdefault("changes", {}), f"{_ADOPTED}{first}", adopter)
    return first


def adopted_by(tx: dict[str, Any], orphan: str) -> str | None:
    """The event that adopted ``orphan`` (``run_teller``), if one did."""
    return (tx.get("changes") or {}).get(f"{_ADOPTED}{orphan}")


def current_run(tx: dict[str, Any]) -> SubRun | None:
    """The run of the subscription's status as the story leaves it (its highest version)."""
    kept: list[dict[str, Any]] = tx.get("story") or []
    last = max((e for e in kept if "ru" in e), key=lambda e: int(e["sv"]), default=None)
    return _kept_run(kept, last) if last is not None else None


def _kept_run(kept_story: list[dict[str, Any]], kept: dict[str, Any]) -> SubRun:
    """The ``SubRun`` of a kept step, read off the stored story."""
    ids = tuple(e["e"] for e in kept_story if e.get("ru") == kept["ru"])
    return SubRun(kept["sv"], kept["ru"], ids)


def _contradicted(tx: dict[str, Any], outcome: Outcome, entries: Sequence[Entry]) -> bool:
    """The fold's word, or a success left out of the story (``paidUntaken``) and an ending the
    provider reports in it."""
    return outcome.contradicted or bool(
        tx.get("paidUntaken") and any(e.step.payment in ENDED and not e.step.own for e in entries)
    )


def _moves(standing: Start, outcome: Outcome) -> bool:
    """Would taking ``outcome`` change the record's or its subscription's status?"""
    return (outcome.status, outcome.sub_status) != (standing.status, standing.sub_status)


def _repeats(story: list[dict[str, Any]], new: Sequence[Entry]) -> dict[str, Any] | None:
    """Each new entry's kept step of the same effect, when every one has one (read off the
    stored steps, none of them parsed); else None."""
    out = {}
    for entry in new:
        effect = _stored_effect(entry.stored(Fate.HELD))
        when, kind = effect[0], effect[1]
        # the latest kept step of that effect; its time (or name) and type, compared first,
        # rule out nearly every other step before its effect is read
        stored = next(
            (
                kept
                for kept in reversed(story)
                if kept.get("n", kept["at"]) == when
                and kept["t"] == kind
                and _stored_effect(kept) == effect
            ),
            None,
        )
        if stored is None or stored["e"] == entry.step.event_id or stored["at"] > entry.step.at:
            return None  # new, or a telling that dates the kept step earlier: folded
        out[entry.step.event_id] = stored
    return out


def _stored_effect(stored: dict[str, Any]) -> Effect:
    """``Step.effect`` of a step as the record keeps it (``Entry.stored``)."""
    refund = stored.get("r")
    return (
        stored.get("n", stored["at"]),
        stored["t"],
        stored.get("p", ""),
        stored.get("s", ""),
        bool(stored.get("st")),
        Refund(refund[0], refund[1]).mark if refund else "",
    )


def _late(entries: Sequence[Entry], tx: dict[str, Any]) -> frozenset[str]:
    """Payments reported for a checkout that has ended (CONTRACT 2: ``payment.paid_late``)."""
    if tx["status"] not in ENDED:
        return frozenset()
    return frozenset(e.step.event_id for e in entries if e.step.money)


def _follow(sub: dict[str, Any], outcome: Outcome, entries: list[Entry], now: int) -> bool:
    """The subscription takes the fold's status, and the period end of its latest event;
    True when it changed."""
    changed = False
    if outcome.sub_status is not None and (
        outcome.sub_status != sub["status"] or outcome.sub_version > sub["version"]
    ):
        sub["status"] = str(outcome.sub_status)
        sub["version"] = max(sub["version"], outcome.sub_version)
        changed = True
    reported = [e for e in entries if e.period_end is not None]
    if reported:
        latest = max(reported, key=lambda e: e.step.order).period_end
        if latest != sub.get("currentPeriodEnd"):
            sub["currentPeriodEnd"] = latest
            changed = True
    if changed:
        sub["updatedAt"] = now
    return changed


def _start_subscription(
    ledger: Ledger,
    tx: dict[str, Any],
    starter: Entry,
    outcome: Outcome,
) -> dict[str, Any]:
    now = ledger.now_ms()
    start = starter.start or {}
    sub = {
        "id": ids.new_sub_id(),
        "projectId": ledger.project_id,
        "kind": str(Kind.SUBSCRIPTION),
        "provider": tx["provider"],
        "productId": tx.get("productId"),
        "txId": tx["id"],
        "status": str(outcome.sub_status),
        "version": 1,
        "amount": tx["amount"],
        "currency": tx["currency"],
        "interval": tx.get("interval"),
        "currentPeriodEnd": starter.period_end,
        "isTest": tx["isTest"],
        "metadata": dict(tx.get("metadata") or {}),
        "customerRef": tx.get("customerRef"),
        "providerRef": start.get("ref"),
        "providerCustomer": start.get("customer"),
        "createdAt": now,
        "updatedAt": now,
    }
    tx["subscriptionId"] = sub["id"]
    # the status record changed (it names the subscription now) even where the payment's
    # status did not (it succeeded before the provider named the subscription)
    tx["updatedAt"] = now
    ledger.add(sub)
    return sub


async def _applied_now(
    ledger: Ledger, tx: dict[str, Any], evt_id: str, now: int, target: Status | None
) -> list[Op]:
    """A held event took effect: its feed entry says when (and, for a refund, whether it
    refunded all or part, now that the refunds before it are counted; told again under its new
    word, it carries the record's status and version as they are now)."""
    event = await ledger.stored_event(evt_id)
    if event is None or event.get("appliedAt") is not None:
        return []  # pruned by retention, or already marked
    before = event["type"]
    event = dict(event, appliedAt=now)
    if target == Status.REFUNDED:
        event["type"] = str(EventType.PAYMENT_REFUNDED)
    elif target == Status.PARTIALLY_REFUNDED:
        event["type"] = str(EventType.PAYMENT_PARTIALLY_REFUNDED)
    if event["type"] != before:
        # told under its first word: owed again to the endpoints that take this one, as the
        # record now is (a merchant keeps the highest version it is told)
        event.update(status=tx["status"], version=tx["version"])
        return ledger.new_event_ops(event)
    return ledger.event_ops(event)


def _untold(
    tx: dict[str, Any], outcome: Outcome, entries: list[Entry], new_ids: set[str]
) -> list[Entry]:
    """The first telling of each subscription status change that none of its tellings told,
    and none of the new ones will: a late step split it off from the change it was kept as a
    repeat of (a pause dated between two tellings of active), so it is a change of its own."""
    if not outcome.sub_runs:
        return []
    told = told_subscription_changes(tx.get("changes") or {})
    runs: dict[str, list[Entry]] = {}
    for entry in sorted(entries, key=lambda e: e.step.order):
        step = entry.step
        mover = outcome.sub_runs.get(step.event_id)
        if mover is not None and by_subscription_status(step.type, step.change):
            runs.setdefault(mover, []).append(entry)
    untold = []
    for mover, members in runs.items():
        ids = tuple(m.step.event_id for m in members)
        if any(i in told or i in new_ids for i in ids):
            continue
        status = str(members[0].step.subscription or outcome.sub_status)
        run = SubRun(outcome.sub_versions[ids[0]], mover, ids)
        if run_teller(tx, run, status, adopter=ids[0]) is None:
            untold.append(members[0])
    return untold


async def _told_now(
    ledger: Ledger,
    tx: dict[str, Any],
    sub: dict[str, Any] | None,
    entry: Entry,
    outcome: Outcome,
) -> list[Op]:
    """``_untold``'s telling, kept as a repeat when it came: told now under its own type, as
    the record and its subscription now are (a merchant keeps the highest version it is
    told), and the change it tells kept as told by it."""
    step = entry.step
    evt_id = step.event_id
    status = str(step.subscription or outcome.sub_status)
    tell_subscription_change(
        tx.setdefault("changes", {}), status, outcome.sub_versions[evt_id], evt_id
    )
    event = await ledger.stored_event(evt_id)
    if event is None or not event.get("duplicateOf"):
        return []  # pruned by retention, or told already (under another word)
    event = {k: v for k, v in event.items() if k != "duplicateOf"}
    event.update(
        type=step.type,
        status=sub["status"] if sub else tx["status"],
        version=tx["version"],
    )
    return ledger.new_event_ops(event)


def _trimmed(
    tx: dict[str, Any], entries: list[Entry], outcome: Outcome, start: Start
) -> list[dict[str, Any]]:
    """The story in fold order, as the record keeps it. Past STORY_KEPT steps its older half is
    folded into the start, when none of that half is still held (a held step may yet be
    reordered)."""
    ordered = sorted(entries, key=lambda e: e.step.order)
    fates = outcome.fates
    stored = [e.stored(fates[e.step.event_id], _run(outcome, e.step.event_id)) for e in ordered]
    if len(stored) <= STORY_KEPT:
        return stored
    half = len(stored) // 2
    if any(e["f"] == "h" for e in stored[:half]):
        return stored
    prefix = fold(
        [e.step for e in ordered[:half]], start, tx["kind"] == Kind.SUBSCRIPTION, tx["amount"]
    )
    tx["storyStart"] = {
        "status": str(prefix.status),
        "version": prefix.version,
        "sub": str(prefix.sub_status) if prefix.sub_status else None,
        "subVersion": prefix.sub_version,
        "refunded": prefix.refunded_total,
        "refunds": [list(r) for r in prefix.refunds],
        "charged": prefix.charged,
    }
    if prefix.disputed:
        tx["storyStart"]["disputed"] = list(prefix.disputed)
    return stored[half:]


async def node_event(
    ledger: Ledger,
    tx: dict[str, Any],
    event_type: EventType,
    target: Status,
    ops: list[Op],
    **fields: Any,
) -> None:
    """A move the node makes itself (marked paid, canceled): a step of the story at the moment
    it is made, and its event in the feed."""
    now = ledger.now_ms()
    evt_id = ids.new_evt_id()
    step = Step(evt_id, now, str(event_type), payment=target, own=True)
    settled = await settle(ledger, tx, [Entry(step)], ops)
    applied = settled.fates.get(evt_id) is Fate.APPLIED
    ops.extend(
        ledger.event(
            tx,
            event_type,
            id=evt_id,
            appliedAt=now if applied else None,
            source=SOURCE_NODE,
            **fields,
        )
    )
    ops.extend(ledger.tx_ops(tx))  # with the change it told


def charged(tx: dict[str, Any]) -> int:
    """What the buyer was charged: the amount, or more where the provider added tax and said
    so in the payment's step."""
    kept = [entry_of(e).step for e in tx.get("story") or () if e.get("c") is not None]
    base = tx.get("storyStart") or {}
    found = base.get("charged")
    for step in kept:
        if step.charged is not None and step.payment == Status.SUCCEEDED:
            found = step.charged
    return int(found) if found is not None else int(tx["amount"])


def refund_steps(tx: dict[str, Any]) -> list[Step]:
    """The story's steps that give money back, the refunds folded into its start (``_trimmed``)
    included as steps of their own: all the refund sums read (``edge.domain.refunds``), without
    parsing every payment step of a long story on every event."""
    kept = [entry_of(e).step for e in tx.get("story") or () if e.get("r")]
    base = tx.get("storyStart") or {}
    disputed = set(base.get("disputed", ()))
    folded = [
        Step(
            f"start:{of}",
            0,
            # what a dispute took stays a dispute's: added to a total, not compared with it
            str(EventType.PAYMENT_DISPUTE_CLOSED if of in disputed else EventType.PAYMENT_REFUNDED),
            refund=Refund(amount, of),
        )
        for of, amount in base.get("refunds", ())
    ]
    if base.get("refunded"):
        total = Refund(int(base["refunded"]))
        folded.append(Step("start", 0, str(EventType.PAYMENT_REFUNDED), refund=total))
    return folded + kept


def reported(tx: dict[str, Any]) -> Reported:
    """What the story's refund steps report given back (``edge.domain.refunds.reported``)."""
    return refunds_reported(refund_steps(tx))


async def node_refund(
    ledger: Ledger, tx: dict[str, Any], refund_id: str, amount: int, ops: list[Op], **fields: Any
) -> Status:
    """A refund the merchant records itself (pay by mail: the money was sent back by hand): a
    step of the story with its amount, summed with the others like a provider's; the status it
    took (refunded, or partially)."""
    now = ledger.now_ms()
    evt_id = ids.new_evt_id()
    step = Step(
        evt_id, now, str(EventType.PAYMENT_REFUNDED), payment=Status.REFUNDED,
        refund=Refund(amount, refund_id), own=True,
    )  # fmt: skip
    settled = await settle(ledger, tx, [Entry(step)], ops)
    target = settled.targets.get(evt_id, Status.REFUNDED)
    kind = (
        EventType.PAYMENT_REFUNDED if target == Status.REFUNDED
        else EventType.PAYMENT_PARTIALLY_REFUNDED
    )  # fmt: skip
    applied = settled.fates.get(evt_id) is Fate.APPLIED
    ops.extend(
        ledger.event(
            tx,
            kind,
            id=evt_id,
            appliedAt=now if applied else None,
            amount=amount,
            refunded=reported(tx).given_back,
            source=SOURCE_NODE,
            **fields,
        )
    )
    return target
