"""A subscription's changes are told once each, whatever order the provider's events come in
(CONTRACT 4.3a, one change, one event): a second telling of a status change is history on
the first, also when it came after the subscription moved on, waited for the provider id it
names, was held, or was dated around a cancel; and a telling kept as history that a late step
shows to be a change of its own is told then. On the real actor and store."""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from actors.project.harness import delivery
from actors.project.test_intake import _echo_owned_tx

from edge.actors.project import story
from edge.actors.project.ledger import Ledger
from edge.store import keys

SUB = ["sub_1"]  # the provider's subscription: linked by the first payment, which starts it
START = dict(id="S", type="payment.succeeded", at=1_000, status="succeeded", starts=True,
             sub="active", subRef="sub_1")  # fmt: skip


def sub(name: str, kind: str, at: int, status: str) -> dict[str, Any]:
    """An event that names only the subscription: before the payment it waits unmatched."""
    return dict(id=name, type=f"subscription.{kind}", at=at, sub=status, refs=SUB)


def renewal(i: int, at: int) -> dict[str, Any]:
    """A renewal's payment, named by its invoice."""
    return dict(id=f"N{i}", type="subscription.payment_succeeded", at=at, sub="active",
                refs=SUB, change=f"inv_{i}")  # fmt: skip


PAST_DUE, UPDATED, CANCELED = (
    "subscription.past_due",
    "subscription.updated",
    "subscription.canceled",
)

# each story: its events, the subscription's status at the end, the changes told (the
# payment's aside), and two tellings of one change (a webhook and a read of the provider,
# under other event ids) of which one is told and the other is history on it
STORIES: dict[str, tuple[list[dict[str, Any]], str, dict[str, int], tuple[str, str] | None]] = {
    "renewed after past due, the renewal told twice, canceled": (
        [START, sub("PD", "past_due", 3_000, "past_due"), sub("U", "updated", 5_000, "active"),
         sub("U2", "updated", 5_000, "active"), sub("C", "canceled", 7_000, "canceled")],
        "canceled", {PAST_DUE: 1, UPDATED: 1, CANCELED: 1}, ("U", "U2"),
    ),
    "past due told twice with two dates, renewed, canceled": (
        [START, sub("PD", "past_due", 3_000, "past_due"),
         sub("PD2", "past_due", 3_500, "past_due"), sub("U", "updated", 5_000, "active"),
         sub("C", "canceled", 7_000, "canceled")],
        "canceled", {PAST_DUE: 1, UPDATED: 1, CANCELED: 1}, ("PD", "PD2"),
    ),
    "paused and resumed, the pause told twice": (
        [START, sub("P", "updated", 3_000, "paused"), sub("P2", "updated", 3_000, "paused"),
         sub("R", "updated", 5_000, "active"), sub("C", "canceled", 7_000, "canceled")],
        "canceled", {UPDATED: 2, CANCELED: 1}, ("P", "P2"),
    ),
    # two moves to active, a pause between them, which came last: until it came they were
    # one change told once; then each is a change of its own, told
    "renewed, paused and resumed, the pause late": (
        [START, sub("PD", "past_due", 3_000, "past_due"), sub("U", "updated", 5_000, "active"),
         sub("P", "updated", 6_000, "paused"), sub("R", "updated", 7_000, "active"),
         sub("C", "canceled", 9_000, "canceled")],
        "canceled", {PAST_DUE: 1, UPDATED: 3, CANCELED: 1}, None,
    ),
    # a pause dated while past due waits for the renewal that ends it
    "a pause held while past due": (
        [START, sub("PD", "past_due", 3_000, "past_due"), sub("P", "updated", 4_000, "paused"),
         sub("U", "updated", 5_000, "active")],
        "paused", {PAST_DUE: 1, UPDATED: 2}, None,
    ),
    # a renewal failed after the resume: while paused the past due waits
    "a past due held while paused": (
        [START, sub("P", "updated", 3_000, "paused"), sub("PD", "past_due", 6_000, "past_due"),
         sub("R", "updated", 5_000, "active")],
        "past_due", {PAST_DUE: 1, UPDATED: 2}, None,
    ),
    # one past due told at two dates with the cancel between them: the later telling is left
    # out of the story once the cancel comes, and is the same change still
    "a past due told around the cancel": (
        [START, sub("PD", "past_due", 3_000, "past_due"),
         sub("C", "canceled", 3_200, "canceled"), sub("PD2", "past_due", 3_500, "past_due")],
        "canceled", {PAST_DUE: 1, CANCELED: 1}, None,
    ),
    "a past due after the cancel, another before it": (
        [START, sub("PD0", "past_due", 3_000, "past_due"),
         sub("C", "canceled", 7_000, "canceled"), sub("I", "past_due", 8_000, "past_due")],
        "canceled", {PAST_DUE: 1, CANCELED: 1}, None,
    ),
}  # fmt: skip

Step = dict[str, Any] | Callable[[Ledger, str], Awaitable[None]]


async def _delivered(harness: Any, order: tuple[Step, ...]) -> dict[str, Any]:
    """A new subscription checkout's feed once ``order`` is delivered to it (a callable is
    run on its ledger and transaction id in its turn): what was told, what repeats what
    (provider event ids), and the subscription's status."""
    project_id, ledger, tx = await _echo_owned_tx(harness)
    tx.update(kind="subscription", interval="month")
    await ledger.submit(ledger.tx_ops(tx)).wait()
    for event in order:
        if callable(event):
            await event(ledger, tx["id"])
            continue
        fields = {"refs": [tx["providerRef"]], "amount": tx["amount"], "currency": "EUR", **event}
        await harness.call(project_id, delivery(**fields))
    prefix = keys.history(project_id, tx["id"])
    stored = [
        await ledger.stored_event(k[len(prefix) :].decode())
        for (k, _) in await harness.ctx.store.scan(prefix, limit=1000)
    ]
    by_id = {e["id"]: e for e in stored if e}
    mine = {e["providerEventId"]: e for e in by_id.values() if e.get("provider") == "echo"}
    record = await ledger.tx(tx["id"])
    subscription = (
        await ledger.subscription(record["subscriptionId"])
        if record.get("subscriptionId")
        else None
    )
    return {
        "told": sorted(p for p, e in mine.items() if not e.get("duplicateOf")),
        "types": Counter(e["type"] for e in mine.values() if not e.get("duplicateOf")),
        "repeats": {
            p: by_id[e["duplicateOf"]]["providerEventId"]
            for p, e in mine.items()
            if e.get("duplicateOf")
        },
        "sub": subscription["status"] if subscription else None,
    }


@pytest.mark.parametrize("name", sorted(STORIES))
async def test_each_subscription_change_is_told_once_in_any_order(harness, echo, name):
    events, sub_end, told, pair = STORIES[name]
    ends: dict[str, list[tuple[str, ...]]] = {}
    for order in itertools.permutations(events):
        end = await _delivered(harness, order)
        twins = (
            sorted(end["repeats"].get(i) in (*pair, None) and i in end["repeats"] for i in pair)
            if pair
            else []
        )
        said = (end["sub"], sorted(end["types"].items()), twins)
        ends.setdefault(repr(said), []).append(tuple(str(e["id"]) for e in order))
    assert len(ends) == 1, "\n".join(f"{end}: {orders[:3]}" for end, orders in ends.items())
    # each change once: the payment, and each status the subscription took after it
    types = sorted({"payment.succeeded": 1, **told}.items())
    assert next(iter(ends)) == repr((sub_end, types, [False, True] if pair else []))


async def test_a_telling_that_waited_with_its_twin_that_links_it_is_told_once(harness, echo):
    """The payment starts the subscription before the provider named it (Paddle's
    transaction.paid); a past due naming only the subscription waits; its twin (same time,
    type and status, under another event id) also names the checkout and links the
    subscription: folded together, one past due told."""
    start = {k: v for k, v in START.items() if k != "subRef"}
    waiting = sub("PD", "past_due", 3_000, "past_due")
    twin = {k: v for k, v in waiting.items() if k != "refs"} | {"id": "PD_b", "subRef": "sub_1"}
    end = await _delivered(harness, (start, waiting, twin))
    assert end["sub"] == "past_due"
    assert end["types"] == Counter({"payment.succeeded": 1, PAST_DUE: 1}), end
    assert end["repeats"] in ({"PD_b": "PD"}, {"PD": "PD_b"}), end


@pytest.mark.parametrize("again", ["a later update", "a kept repeat"])
async def test_a_change_folded_into_the_storys_start_is_not_told_again(
    harness, echo, monkeypatch, again
):
    """The resume U is told; past STORY_KEPT the story's older half, U in it, is folded into
    its start. A ``customer.subscription.updated`` that changed something else (active
    still), or a repeat of U kept in the later half, is the same change: history."""
    monkeypatch.setattr(story, "STORY_KEPT", 6)
    events: list[Step] = [START, sub("PD", "past_due", 3_000, "past_due"),
                          sub("U", "updated", 5_000, "active")]  # fmt: skip
    if again == "a kept repeat":
        events += [
            sub("U2", "updated", 5_500, "active"),
            *(renewal(i, 6_000 + i) for i in range(4)),
        ]
    else:
        events += [
            *(renewal(i, 6_000 + i) for i in range(5)),
            sub("U2", "updated", 9_000, "active"),
        ]
    end = await _delivered(harness, tuple(events))
    assert end["sub"] == "active"
    assert end["repeats"].get("U2") == "U" and "U2" not in end["told"], end


async def test_a_repeat_on_a_record_kept_before_runs_is_history_on_its_step(harness, echo):
    """A record stored before the story kept each step's run (no ``sv``/``ru``): the
    provider's exact repeat of its past due, after a renewal, is history on the past due
    (a step the story has), not a change keyed by the subscription as it is."""

    async def as_kept_before(ledger: Ledger, tx_id: str) -> None:
        tx = await ledger.tx(tx_id)
        for step in tx["story"]:
            step.pop("sv", None)
            step.pop("ru", None)
        await ledger.submit(ledger.tx_ops(tx)).wait()

    again = sub("PD_again", "past_due", 3_000, "past_due")
    events = (START, sub("PD", "past_due", 3_000, "past_due"), renewal(1, 5_000), as_kept_before)
    end = await _delivered(harness, (*events, again))
    assert end["repeats"].get("PD_again") == "PD", end


async def test_the_changes_told_are_kept_on_the_stored_record_in_any_order(harness, echo):
    """What told each change (a waited event told when the payment links it, a telling a
    cancel left out of the story adopted by the change of its status) is written with the
    record, not only held by the actor: a node started again tells nothing twice."""
    events, *_ = STORIES["a past due told around the cancel"]
    for order in itertools.permutations(events):
        project_id, ledger, tx = await _echo_owned_tx(harness)
        tx.update(kind="subscription", interval="month")
        await ledger.submit(ledger.tx_ops(tx)).wait()
        for event in order:
            fields = {"refs": [tx["providerRef"]], "amount": tx["amount"], "currency": "EUR"}
            await harness.call(project_id, delivery(**(fields | event)))
        held = (await ledger.tx(tx["id"]))["changes"]
        kept = await harness.ctx.store.get(keys.record(project_id, keys.TRANSACTION, tx["id"]))
        assert kept["changes"] == held, [e["id"] for e in order]
