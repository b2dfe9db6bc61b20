"""Convergence (CONTRACT 2): the same set of events gives the same outcome, whatever order the
provider delivered them in.

A transaction's outcome is a fold of its *story*: every event that asks it (or its subscription)
to move, taken in the order the provider says they happened (``occurredAt``; ties broken by a
fixed lifecycle rank, so a refund stamped in the same second as its payment comes after it).
Each step of the fold is one of:

- applied: the record may take the step now (a move, or the status it already has);
- held: not yet, but a status where it applies is still ahead (a refund before the payment's
  success, a dispute's closing before its opening); it is tried again, in story order, each time
  the record moves;
- ignored: no status where it applies is ahead any more (a late failure after success); it
  changes nothing. A payment reported for a checkout that has already ended (failed, canceled,
  expired) is ignored too, and marked *late*: money the merchant must look at.

Only a dispute's closing leaves ``disputed``: the tables allow disputed -> succeeded, and a
late duplicate "payment succeeded" must not end a dispute. The first successful payment of a
subscription checkout starts the subscription, which then folds on its own table.

Refunds are summed by amount, whatever the provider calls them (CONTRACT 4.3): a refund step
carries what it gives back (one refund of the provider's, or the total refunded so far), and
when it applies, the refunds taken so far and its own decide ``refunded`` (they reach what the
buyer was charged: the transaction's amount, or more where the provider added tax on top and
said so in the payment's step) or ``partially_refunded``. The provider's word (full, partial, a null
type) only counts for a refund that states no amount.

A story that holds both a success and an ending of the checkout (failed, canceled, expired), or
two different endings, is *contradicted*: whichever the record took first stays (terminal stays
terminal; a success is never taken back), and the merchant is told (``needsAttention``) in
every delivery order. One ending yields, so that the pair converges: a cancellation the
*provider* reports (Paddle's ``transaction.canceled``; not the node's or the merchant's own
cancel) of a checkout the same provider reports paid. A provider that took the money cannot
also have canceled the checkout it was taken for, so the payment wins in every delivery order:
the cancel is ignored, and a record that took it first moves on to the payment (``voided``).

The fold is a pure function of the set of steps, so delivering the same events in any order and
any number of times (identical steps count once) ends in the same place. The actor re-folds on
every event and adopts the result only when it lies ahead of the record's current status, so a
status never moves backwards.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from enum import Enum

from .events import EventType
from .status import ENDED, Kind, Status, can_transition, reachable

REFUND_TARGETS = frozenset({Status.REFUNDED, Status.PARTIALLY_REFUNDED})

# The run (``Outcome.sub_runs``) of a subscription status the story's start already had: its
# mover was folded into the start (a long story's older half)
START_RUN = "start@"


# (when, or the change's name; type; payment; subscription; starts; refund mark)
Effect = tuple[int | str, str, str, str, bool, str]

# A step of these types that gives money back tells what a dispute took: never in a provider's
# "refunded so far" (Stripe's ``amount_refunded``, PayPal's ``total_refunded_amount`` count
# refunds only), so it is added to that total, not compared with it.
DISPUTE_TYPES = frozenset({EventType.PAYMENT_DISPUTED, EventType.PAYMENT_DISPUTE_CLOSED})


def given_back(total: int, each: Mapping[str, int], disputed: AbstractSet[str]) -> int:
    """What went back to the buyer: the provider's latest total of refunds or the named refunds'
    sum, whichever says more (a total counts the named refunds made before it), and what
    disputes took on top."""
    refunds = sum(amount for of, amount in each.items() if of not in disputed)
    return max(total, refunds) + sum(amount for of, amount in each.items() if of in disputed)


class Fate(Enum):
    APPLIED = "applied"
    HELD = "held"
    IGNORED = "ignored"


# Within one timestamp, the order a payment's life takes. Providers stamp in whole seconds, and
# a payment, its subscription and its refund often share one.
_PAYMENT_RANK = {
    Status.PROCESSING: 1,
    Status.SUCCEEDED: 2,
    Status.PARTIALLY_REFUNDED: 3,
    Status.DISPUTED: 4,
    Status.REFUNDED: 6,
    Status.FAILED: 7,
    Status.CANCELED: 7,
    Status.EXPIRED: 7,
}
_SUBSCRIPTION_RANK = {
    Status.TRIALING: 2,
    Status.ACTIVE: 2,
    Status.PAST_DUE: 3,
    Status.PAUSED: 3,
    Status.CANCELED: 8,
}
_CLOSING_RANK = 5  # a dispute's closing: after its opening, before a refund


@dataclass(frozen=True)
class Refund:
    """Money a refund step gives back, in the transaction's minor units: one refund of the
    provider's (``of`` its id: a Paddle adjustment, a PayPal refund), or, with ``of`` None, the
    total refunded so far (Stripe's ``amount_refunded``, PayPal's ``total_refunded_amount``)."""

    amount: int
    of: str | None = None

    @property
    def mark(self) -> str:
        return f"{self.of or ''}:{self.amount}"


@dataclass(slots=True)  # not frozen: made per request (docs/architecture.md)
class Step:
    """What one event asks of a transaction: a payment status, a subscription status, and
    whether it is the first payment of a subscription checkout (which starts it)."""

    event_id: str
    at: int  # when it happened, ms (the node's receipt time when the provider gives none)
    type: str  # EventType
    payment: Status | None = None
    subscription: Status | None = None
    starts: bool = False
    refund: Refund | None = None  # what a refund step gives back, when the provider says
    charged: int | None = None  # what a payment took from the buyer, when more than the price
    own: bool = False  # the node's own act (marked paid, canceled by the merchant or the node)
    # the provider's name for the change (``NormalizedEvent.change``: a dispute's, an
    # adjustment's, a renewal's id), where it tells one change in several events
    change: str | None = None

    @property
    def yields(self) -> bool:
        """A cancellation the provider reported: a payment it reports too wins over it."""
        return self.payment == Status.CANCELED and not self.own

    @property
    def pays(self) -> bool:
        """Does the step report the checkout paid (a dispute's closing does not)?"""
        return self.payment == Status.SUCCEEDED and self.type != EventType.PAYMENT_DISPUTE_CLOSED

    @property
    def money(self) -> bool:
        """Does the step report money paid or under way (a dispute's closing does not)?"""
        closing = self.type == EventType.PAYMENT_DISPUTE_CLOSED
        return self.payment in (Status.SUCCEEDED, Status.PROCESSING) and not closing

    @property
    def effect(self) -> Effect:
        """Two events with the same effect are one step (a provider's duplicate under a new
        id must not move a record twice); two refunds of other amounts are two steps. A named
        change is one step whenever it is dated: its webhook and what asking found (Stripe
        stamps an event when it makes it, the dispute when it opened) are one, at the
        earlier time (the fold keeps the first of an effect in story order)."""
        return (
            self.at if self.change is None else self.change,
            self.type,
            self.payment or "",
            self.subscription or "",
            self.starts,
            self.refund.mark if self.refund else "",
        )

    @property
    def order(self) -> tuple[int, int, str, str, str, bool, str, str]:
        if self.type == EventType.PAYMENT_DISPUTE_CLOSED:
            rank = _CLOSING_RANK
        elif self.refund is not None:
            # a refund of an amount ranks as one, whatever the provider called it: full or
            # partial is decided by the sum, once the fold has put it in its place
            rank = _PAYMENT_RANK[Status.PARTIALLY_REFUNDED]
        elif self.payment is not None:
            rank = _PAYMENT_RANK.get(self.payment, 9)
        elif self.subscription is not None:
            rank = _SUBSCRIPTION_RANK.get(self.subscription, 9)
        else:
            rank = 9
        return (self.at, rank, *self.effect[1:], self.event_id)


@dataclass(frozen=True)
class Start:
    """The transaction's starting point: ``pending`` at version 1 for a new checkout; a record
    stored before stories were kept starts from where it stood."""

    status: Status = Status.PENDING
    version: int = 1
    sub_status: Status | None = None
    sub_version: int = 0
    # the refunds of the steps folded into it (a long story's older half)
    refunded_total: int = 0
    refunds: tuple[tuple[str, int], ...] = ()
    charged: int | None = None
    disputed: tuple[str, ...] = ()  # of ``refunds``, what disputes took (``DISPUTE_TYPES``)


@dataclass(frozen=True)
class Outcome:
    status: Status
    version: int  # the start's, plus one per status change
    sub_status: Status | None  # None: no subscription (yet)
    sub_version: int
    started_by: str | None  # the event id of the step that started the subscription
    refunded_total: int = 0  # as the fold ended: the highest total reported
    refunds: tuple[tuple[str, int], ...] = ()  # and each refund counted
    charged: int | None = None  # and what the payment took, when it said
    disputed: tuple[str, ...] = ()  # of ``refunds``, what disputes took
    fates: dict[str, Fate] = field(default_factory=dict)  # event id -> fate
    late: frozenset[str] = frozenset()  # event ids: money for a checkout that had ended
    # event id -> the status a refund step asked for once its amount was counted
    targets: dict[str, Status] = field(default_factory=dict)
    contradicted: bool = False  # a success and an ending, or two endings
    voided: bool = False  # a cancel the provider reported yields to its report of the payment
    # event id -> the subscription's version once the step's subscription part applied: where
    # in the subscription's life its status change happened, whatever came after
    sub_versions: dict[str, int] = field(default_factory=dict)
    # event id -> the step that moved the subscription to the status the step left it at (its
    # run): tellings of one status change share it, whatever their dates and ids
    sub_runs: dict[str, str] = field(default_factory=dict)


class _Fold:
    def __init__(
        self, start: Start, subscription_checkout: bool, amount: int | None, paid: bool
    ) -> None:
        self.paid = paid  # the story holds a payment: a cancel the provider reported yields
        self.status = start.status
        self.version = start.version
        self.sub_status = start.sub_status
        self.sub_version = start.sub_version
        self.subscription_checkout = subscription_checkout
        self.started_by: str | None = None
        self.sub_versions: dict[str, int] = {}
        self.sub_run: str | None = None
        self.held: list[Step] = []  # the steps waiting for the status to allow them (``fold``)
        self.sub_runs: dict[str, str] = {}
        self.amount = amount  # the transaction's, in minor units
        self.charged = start.charged  # what the payment took, when it said (tax on top)
        self.refunded_total = start.refunded_total  # the highest "refunded so far" reported
        self.refunds: dict[str, int] = dict(start.refunds)  # one refund's id -> its amount
        self.disputed: set[str] = set(start.disputed)  # of those, the money a dispute took

    # -- refunds, summed by amount ------------------------------------------------------------

    def target(self, step: Step) -> Status | None:
        """Where the step asks the payment to go: a refund's by the money refunded once it is
        counted; any other step's (and a refund's that states no amount) by its own word."""
        refund = step.refund
        basis = self.charged if self.charged is not None else self.amount
        if refund is None or basis is None or step.payment not in REFUND_TARGETS:
            return step.payment
        return Status.REFUNDED if self._refunded(step) >= basis else Status.PARTIALLY_REFUNDED

    def _refunded(self, *steps: Step) -> int:
        """What is given back once ``steps`` are counted too."""
        total, each, disputed = self.refunded_total, dict(self.refunds), set(self.disputed)
        for step in steps:
            refund = step.refund
            if refund is None:
                continue
            if refund.of is None:
                total = max(total, refund.amount)
            else:
                each[refund.of] = refund.amount
                if step.type in DISPUTE_TYPES:
                    disputed.add(refund.of)
        return given_back(total, each, disputed)

    def _all_given_back(self, step: Step) -> bool:
        """Do ``step`` and the refunds waiting for the status to allow them give back all
        that was paid? Part refunds made while a dispute is open, summing to the whole, end
        it refunded as one full refund does, in any order."""
        basis = self.charged if self.charged is not None else self.amount
        waiting = (w for w in self.held if w.payment in REFUND_TARGETS)
        return basis is not None and self._refunded(*waiting, step) >= basis

    def _count(self, step: Step) -> None:
        refund = step.refund
        assert refund is not None
        if refund.of is None:
            self.refunded_total = max(self.refunded_total, refund.amount)
        else:
            self.refunds[refund.of] = refund.amount
            if step.type in DISPUTE_TYPES:
                self.disputed.add(refund.of)

    # -- verdicts: may the step apply now, later, or never ----------------------------------

    def _payment_fits(self, step: Step, status: Status) -> bool:
        target = self.target(step)
        if step.type == EventType.PAYMENT_DISPUTE_CLOSED:
            return status == Status.DISPUTED
        if status == Status.DISPUTED:
            # only a dispute's closing leaves it, or all the money given back (the table's
            # disputed -> refunded): a full refund dated after the dispute's opening ends
            # refunded whichever of the two came first
            return target == Status.DISPUTED or (
                step.refund is not None
                and (target == Status.REFUNDED or self._all_given_back(step))
            )
        assert target is not None
        return status == target or can_transition(Kind.PAYMENT, status, target)

    def _payment(self, step: Step) -> Fate:
        if step.yields and self.paid:
            return Fate.IGNORED
        if self._payment_fits(step, self.status):
            return Fate.APPLIED
        ahead = reachable(Kind.PAYMENT, self.status)
        return Fate.HELD if any(self._payment_fits(step, s) for s in ahead) else Fate.IGNORED

    def _subscription(self, step: Step, status_after: Status) -> Fate:
        if self.sub_status is None:
            if self.subscription_checkout and (
                status_after == Status.SUCCEEDED
                or Status.SUCCEEDED in reachable(Kind.PAYMENT, status_after)
            ):
                if step.starts and status_after == Status.SUCCEEDED:
                    return Fate.APPLIED
                return Fate.HELD  # the subscription has not started yet
            return Fate.IGNORED
        target = step.subscription
        if target is None:  # a start once started: nothing more to do
            return Fate.APPLIED
        if self.sub_status == target or can_transition(Kind.SUBSCRIPTION, self.sub_status, target):
            return Fate.APPLIED
        ahead = reachable(Kind.SUBSCRIPTION, self.sub_status)
        fits = any(s == target or can_transition(Kind.SUBSCRIPTION, s, target) for s in ahead)
        return Fate.HELD if fits else Fate.IGNORED

    def verdict(self, step: Step) -> tuple[Fate, bool, bool]:
        """The step's fate now, and which of its parts (payment, subscription) apply."""
        pay = self._payment(step) if step.payment is not None else None
        target = self.target(step)
        status_after = target if pay is Fate.APPLIED and target else self.status
        wants_sub = step.subscription is not None or step.starts
        sub = self._subscription(step, status_after) if wants_sub else None
        parts = [f for f in (pay, sub) if f is not None]
        if not parts or Fate.HELD in parts:
            return (Fate.HELD if parts else Fate.APPLIED), False, False
        if Fate.APPLIED in parts:
            return Fate.APPLIED, pay is Fate.APPLIED, sub is Fate.APPLIED
        return Fate.IGNORED, False, False

    # -- moves -------------------------------------------------------------------------------

    def apply(self, step: Step, pay: bool, sub: bool) -> None:
        """Take the step's applicable parts (a part whose status the record has changes
        nothing, but a refund's money counts even then)."""
        target = self.target(step)
        if pay and step.refund is not None and target in REFUND_TARGETS:
            self._count(step)
        if pay and target == Status.SUCCEEDED and step.charged is not None:
            self.charged = step.charged
        if pay and target is not None and target != self.status:
            self.status = target
            self.version += 1
        if not sub:
            return
        if self.sub_status is None:
            initial = step.subscription
            self.sub_status = (
                initial if initial in (Status.TRIALING, Status.ACTIVE) else (Status.ACTIVE)
            )
            self.sub_version = 1
            self.started_by = self.sub_run = step.event_id
        elif step.subscription is not None and step.subscription != self.sub_status:
            self.sub_status = step.subscription
            self.sub_version += 1
            self.sub_run = step.event_id
        self.sub_versions[step.event_id] = self.sub_version
        # a status the start already had (a story kept from before its steps) has no mover
        self.sub_runs[step.event_id] = self.sub_run or f"{START_RUN}{self.sub_version}"


def fold(
    given: Iterable[Step],
    start: Start | None = None,
    subscription_checkout: bool = False,
    amount: int | None = None,
) -> Outcome:
    """The outcome of ``given`` from ``start``, whatever order the steps are given in;
    ``amount`` is the transaction's (minor units), which refunds are summed against."""
    steps = list(given)
    unique: dict[Effect, Step] = {}
    for step in sorted(steps, key=lambda s: s.order):
        unique.setdefault(step.effect, step)
    paid = any(step.pays for step in unique.values())
    state = _Fold(start or Start(), subscription_checkout, amount, paid)
    fates: dict[str, Fate] = {}
    late: set[str] = set()
    targets: dict[str, Status] = {}
    held = state.held

    def settle(step: Step) -> bool:
        """Apply or drop ``step`` if its fate is decided now; False while it waits."""
        fate, pay, sub = state.verdict(step)
        fates[step.event_id] = fate
        if step.refund is not None and step.payment in REFUND_TARGETS:
            targets[step.event_id] = state.target(step) or step.payment
        if fate is Fate.APPLIED:
            state.apply(step, pay, sub)
        elif fate is Fate.IGNORED and _is_late(step, state.status):
            late.add(step.event_id)
        return fate is not Fate.HELD

    for step in unique.values():
        if not settle(step):
            held.append(step)
            continue
        # the record moved: the held steps now possible are applied, in story order
        retry = True
        while retry and held:
            retry = False
            for waiting in list(held):
                if settle(waiting):
                    held.remove(waiting)
                    retry = fates[waiting.event_id] is Fate.APPLIED
                    if retry:
                        break
    for step in steps:  # a duplicate shares the fate of the step it repeats
        if step.event_id not in fates:
            first = unique[step.effect]
            fates[step.event_id] = fates[first.event_id]
            if first.event_id in late:
                late.add(step.event_id)
            if first.event_id in targets:
                targets[step.event_id] = targets[first.event_id]
            if first.event_id in state.sub_versions:
                state.sub_versions[step.event_id] = state.sub_versions[first.event_id]
                state.sub_runs[step.event_id] = state.sub_runs[first.event_id]
    return Outcome(
        status=state.status,
        version=state.version,
        sub_status=state.sub_status,
        sub_version=state.sub_version,
        started_by=state.started_by,
        refunded_total=state.refunded_total,
        refunds=tuple(sorted(state.refunds.items())),
        disputed=tuple(sorted(state.disputed)),
        charged=state.charged,
        fates=fates,
        late=frozenset(late),
        targets=targets,
        contradicted=contradicted(unique.values()),
        sub_versions=state.sub_versions,
        sub_runs=state.sub_runs,
        # the node's own cancel never yields, also when the provider reports it too (Paddle's
        # transaction.canceled after the node asked for it): money after it is late
        voided=paid
        and any(step.yields for step in unique.values())
        and not any(step.own and step.payment == Status.CANCELED for step in unique.values()),
    )


def _is_late(step: Step, status: Status) -> bool:
    """Money reported for a checkout that had already ended (CONTRACT 2: ``payment.paid_late``)."""
    return step.money and status in ENDED


def contradicted(steps: Iterable[Step]) -> bool:
    """Does the story say both that the checkout was paid and that it ended unpaid, or that it
    ended in two ways (expired, and failed)? No order of delivery can honour both (terminal
    stays terminal, a success is never taken back), so the merchant must look, whichever the
    record took."""
    paid = False
    endings: set[Status] = set()
    for step in steps:
        if step.pays:
            paid = True
        elif step.payment in ENDED and not step.own:
            # the node's own cancel is no report of the provider's: money after it is late
            endings.add(step.payment)
    return (paid and bool(endings)) or len(endings) > 1


def ahead_or_same(kind: Kind, current: Status, candidate: Status) -> bool:
    """May a record at ``current`` be moved to ``candidate`` (never backwards)?"""
    return candidate == current or candidate in reachable(kind, current)


def behind(standing: Start, outcome: Outcome) -> bool:
    """Would taking ``outcome`` move a record at ``standing`` (or its subscription)
    backwards? A record canceled by the provider's report, which the story now shows paid,
    moves on as if the cancel had never come (``voided``)."""
    status = (
        Status.PENDING
        if outcome.voided and standing.status == Status.CANCELED
        else (standing.status)
    )
    if not ahead_or_same(Kind.PAYMENT, status, outcome.status):
        return True
    return standing.sub_status is not None and (
        outcome.sub_status is None
        or not ahead_or_same(Kind.SUBSCRIPTION, standing.sub_status, outcome.sub_status)
    )
