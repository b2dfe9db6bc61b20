"""A transaction's story as the actor keeps it (``story.settle``, ``story._trimmed``): a change
the provider names, told twice with other times, ends where it would in any order; what a
dispute took stays a dispute's once the story's older half is folded into its start."""

from __future__ import annotations

from typing import Any

from edge.actors.project import story
from edge.domain.convergence import Refund, Step, fold
from edge.domain.events import EventType as E
from edge.domain.status import Status as S


class FakeLedger:
    """What ``story.settle`` uses of the ledger, for a payment transaction."""

    def now_ms(self) -> int:
        return 10**13

    async def stored_event(self, evt_id: str) -> None:
        return None

    def tx_ops(self, tx: dict[str, Any]) -> list[Any]:
        return []


def _tx() -> dict[str, Any]:
    return {
        "id": "tx_1",
        "kind": "payment",
        "amount": 1000,
        "status": "pending",
        "version": 1,
        "story": [],
        "storyStart": {"status": "pending", "version": 1},
    }


async def _deliver(order: list[Step]) -> tuple[str, int]:
    tx, ledger = _tx(), FakeLedger()
    for step in order:
        await story.settle(ledger, tx, [story.Entry(step)], [])  # type: ignore[arg-type]
    return tx["status"], tx["version"]


# -- a named change told twice ------------------------------------------------------------

PAID = Step("e_paid", 0, str(E.PAYMENT_SUCCEEDED), S.SUCCEEDED)
# PayPal: the claim's webhook (CUSTOMER.DISPUTE.CREATED, at its opening) and asking, which
# dates an open claim by the dispute's update_time (paypal/sync.py _dispute_events: ``now``)
CLAIM_HOOK = Step("e_claim_hook", 1_000, str(E.PAYMENT_DISPUTED), S.DISPUTED, change="PP-D-1")
REFUND = Step(
    "e_refund", 2_000, str(E.PAYMENT_PARTIALLY_REFUNDED), S.PARTIALLY_REFUNDED,
    refund=Refund(300, "R-1"),
)  # fmt: skip
CLAIM_READ = Step("e_claim_read", 3_000, str(E.PAYMENT_DISPUTED), S.DISPUTED, change="PP-D-1")
WON = Step("e_won", 4_000, str(E.PAYMENT_DISPUTE_CLOSED), S.SUCCEEDED, change="PP-D-1")


async def test_a_named_change_told_late_first_is_re_dated_by_its_earlier_telling():
    """PayPal's claim told by asking (dated by its last update) before its webhook (dated at
    its opening): one step, re-dated to the opening when the webhook comes, so the refund
    made between the two dates is held by the claim as it is when the webhook comes first."""
    webhook_first = await _deliver([PAID, CLAIM_HOOK, REFUND, CLAIM_READ, WON])
    asked_first = await _deliver([PAID, CLAIM_READ, CLAIM_HOOK, REFUND, WON])
    pure = fold([PAID, CLAIM_HOOK, REFUND, CLAIM_READ, WON], amount=1000)
    assert webhook_first[0] == str(pure.status)
    assert asked_first == webhook_first


async def test_a_re_dating_that_would_move_the_record_untold_is_not_taken():
    """A repeat is told to no one: once the refund was applied and the dispute opened and
    closed after it, a telling that would put the dispute before the refund (and the record
    at another status) leaves the story as it stands; the merchant's last word stays true."""
    told = await _deliver([PAID, REFUND, CLAIM_READ, WON])
    assert await _deliver([PAID, REFUND, CLAIM_READ, WON, CLAIM_HOOK]) == told


# -- a dispute's money in the story's start ---------------------------------------------------


def test_trimming_the_story_keeps_what_a_dispute_took_added(monkeypatch):
    """Stripe: 5.00 refunded (known by ``amount_refunded``), then a lost dispute of 5.00 on a
    10.00 charge: all of it given back, before and after the story is long enough to have
    its older half folded into ``storyStart``."""
    steps = [
        PAID,
        Step("e_total", 1_000, str(E.PAYMENT_PARTIALLY_REFUNDED), S.PARTIALLY_REFUNDED,
             refund=Refund(500)),
        Step("e_open", 2_000, str(E.PAYMENT_DISPUTED), S.DISPUTED, change="dp_1"),
        Step("e_lost", 3_000, str(E.PAYMENT_DISPUTE_CLOSED), S.REFUNDED,
             refund=Refund(500, "dp_1"), change="dp_1"),
    ]  # fmt: skip
    # the later half: anything settled (a subscription's renewals, say)
    steps += [
        Step(f"e_r{i}", 10_000 + i, str(E.SUBSCRIPTION_PAYMENT_SUCCEEDED), change=f"in_{i}")
        for i in range(4)
    ]
    outcome = fold(steps, amount=1000)
    assert outcome.status == S.REFUNDED
    tx = _tx()
    entries = [story.Entry(s) for s in steps]
    tx["story"] = [e.stored(outcome.fates[e.step.event_id]) for e in entries]
    before = story.reported(tx).given_back
    assert before == 1000
    monkeypatch.setattr(story, "STORY_KEPT", 6)
    start = story._start(tx, None)
    tx["story"] = story._trimmed(tx, entries, outcome, start)
    assert len(tx["story"]) == 4  # the older half was folded into storyStart
    assert story.reported(tx).given_back == before
