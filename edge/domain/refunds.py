"""What is left to refund (CONTRACT 4.3a), without I/O.

    refundable = charged - what the provider reports given back - node refunds not yet reported

What the provider reports comes from the transaction's story (its webhooks and what the node
learned by asking), read by ``reported``:

- a refund the provider names (a Stripe ``re_``, a PayPal refund, a Paddle adjustment, a lost
  dispute) counts once under its id, whatever the number of events that name it;
- a total "refunded so far" (Stripe's ``amount_refunded``, PayPal's ``total_refunded_amount``)
  counts as the latest one the provider stated, by the provider's own time;
- a refund that failed after it was taken (``payment.refund_failed``) no longer counts: under
  its id, and off the latest total if that was stated between its report and its failure;
- a dispute closed in the merchant's favour that states an amount gives that money back to the
  merchant (a chargeback the provider had taken, then won back).

What the node asked for and the provider has not reported yet is *held* (``held``): each node
refund counts once, through the provider refund id it produced. A node refund is reported once
that id is among the named refunds, or once a total was stated at or after the moment the
provider made it (a total counts every refund made before it). A refund whose outcome is not
known (``requested``, ``unknown``) stays held, so an answer that was lost can never free money
the provider may have given back. A refund refused for good frees its amount.

Every function is a pure function of its arguments: the same story gives the same figures,
whatever order its events came in.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from . import convergence
from .convergence import Step
from .events import EventType
from .status import Status

# Where a refund the node asked for stands (the merchant API's ``refunds[].state``).
REQUESTED = "requested"  # owed to the provider; no answer heard yet
SENT = "sent"  # the provider took it; the money has not moved yet (a review, a claim)
SUCCEEDED = "succeeded"  # the provider says the money went back
FAILED = "failed"  # the provider refused it for good, or it failed after it was taken
UNKNOWN = "unknown"  # the node stopped asking without an answer: the amount stays held
DONE = "done"  # pay by mail: sent back by hand, recorded by the merchant
STATES = (REQUESTED, SENT, SUCCEEDED, FAILED, UNKNOWN, DONE)
HELD_STATES = frozenset({REQUESTED, SENT, SUCCEEDED, UNKNOWN})


@dataclass(slots=True)  # not frozen: made per request (docs/architecture.md)
class Reported:
    """What the provider reports given back: ``each`` named refund's amount, and the latest
    ``total`` stated (at ``total_at``, the provider's time), less refunds failed since, and
    less what came back to the merchant (``returned``: a chargeback the provider took and then
    won back, Paddle's ``chargeback_reverse``)."""

    each: Mapping[str, int] = field(default_factory=dict)
    total: int = 0
    total_at: int | None = None
    returned: int = 0
    disputed: frozenset[str] = frozenset()  # of ``each``, what disputes took

    @property
    def given_back(self) -> int:
        return max(0, convergence.given_back(self.total, self.each, self.disputed) - self.returned)


@dataclass(frozen=True)
class NodeRefund:
    """A refund the node asked for, as its record keeps it."""

    amount: int
    state: str
    provider_id: str | None = None
    provider_created_ms: int | None = None


def reported(steps: Iterable[Step]) -> Reported:
    """What the story's refund steps report given back (every step, whatever its fate: money
    given back counts even where the status cannot show it)."""
    each: dict[str, int] = {}
    each_at: dict[str, int] = {}  # when each named refund was first reported
    failures: list[Step] = []
    returned: dict[str, int] = {}  # money won back, by the closing's id
    latest: tuple[int, int] | None = None  # (at, total)
    disputed: set[str] = set()
    for step in steps:
        refund = step.refund
        if refund is None:
            continue
        if step.type == EventType.PAYMENT_REFUND_FAILED:
            failures.append(step)
        elif step.type == EventType.PAYMENT_DISPUTE_CLOSED and step.payment == Status.SUCCEEDED:
            returned[refund.of or f"{step.at}"] = refund.amount
        elif refund.of is None:
            if latest is None or (step.at, refund.amount) > latest:
                latest = (step.at, refund.amount)
        else:
            each[refund.of] = max(each.get(refund.of, 0), refund.amount)
            each_at[refund.of] = min(each_at.get(refund.of, step.at), step.at)
            if step.type in convergence.DISPUTE_TYPES:
                disputed.add(refund.of)
    total, total_at = (latest[1], latest[0]) if latest else (0, None)
    named = set(each)
    failed: dict[str, tuple[int, int]] = {}  # one failure per refund: (at, amount)
    for failure in failures:
        assert failure.refund is not None
        key = failure.refund.of or f"{failure.at}:{failure.refund.amount}"
        failed[key] = max(failed.get(key, (0, 0)), (failure.at, failure.refund.amount))
    for of, (at, amount) in failed.items():
        if of in named and amount < each[of]:
            each[of] -= amount  # a part of it failed (withdrawn before it was paid out)
        elif of in named:
            each.pop(of, None)
            # a total stated since it was reported counted it too
            if total_at is not None and each_at[of] <= total_at <= at:
                total -= amount
        elif total_at is not None and at >= total_at:
            total -= amount
    return Reported(
        each, max(total, 0), total_at, sum(returned.values()), frozenset(disputed & set(each))
    )


def is_reported(refund: NodeRefund, by: Reported) -> bool:
    """Has the provider reported this node refund (so it counts in ``by``, not as held)?"""
    if refund.provider_id is not None and refund.provider_id in by.each:
        return True
    return (
        by.total_at is not None
        and refund.provider_created_ms is not None
        and by.total_at >= refund.provider_created_ms
    )


def held(refunds: Iterable[NodeRefund], by: Reported) -> int:
    """The node refunds whose money may be on its way back and is not reported yet."""
    return sum(r.amount for r in refunds if r.state in HELD_STATES and not is_reported(r, by))


def kept(refunds: Sequence[NodeRefund], by: Reported, limit: int) -> list[int]:
    """Which of a transaction's refund records it keeps (their places, in order): every one
    whose amount is still held (``held``), however many, and the latest of the others, up to
    ``limit`` in all. A record dropped while held would free money the provider may yet pay."""
    holding = {
        i for i, r in enumerate(refunds) if r.state in HELD_STATES and not is_reported(r, by)
    }
    others = [i for i in range(len(refunds)) if i not in holding]
    room = max(0, limit - len(holding))
    return sorted(holding.union(others[len(others) - room :] if room else ()))


def refundable(charged: int, by: Reported, refunds: Iterable[NodeRefund]) -> int:
    """What is left to refund of ``charged``: never below nothing."""
    return max(0, charged - by.given_back - held(refunds, by))
