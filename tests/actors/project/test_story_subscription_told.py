"""A subscription's changes are told once each, whatever order the provider's events come in
(CONTRACT 4.3a, one change, one event): a second telling of a status change is history on
the first, also when it came after the subscription moved on, or waited for the provider id
it names. On the real actor and store."""

from __future__ import annotations

import itertools
from collections import Counter
from typing import Any

import pytest
from actors.project.harness import delivery
from actors.project.test_intake import _echo_owned_tx

from edge.store import keys

SUB = ["sub_1"]  # the provider's subscription: linked by the first payment, which starts it
START = dict(id="S", type="payment.succeeded", at=1_000, status="succeeded", starts=True,
             sub="active", subRef="sub_1")  # fmt: skip


def sub(name: str, kind: str, at: int, status: str) -> dict[str, Any]:
    """An event that names only the subscription: before the payment it waits unmatched."""
    return dict(id=name, type=f"subscription.{kind}", at=at, sub=status, refs=SUB)


# each story: its events, and two tellings of one change (a webhook and a read of the
# provider, under other event ids), of which one is told and the other is history on it
STORIES: dict[str, tuple[list[dict[str, Any]], tuple[str, str] | None]] = {
    "renewed after past due, the renewal told twice, canceled": (
        [START, sub("PD", "past_due", 3_000, "past_due"), sub("U", "updated", 5_000, "active"),
         sub("U2", "updated", 5_000, "active"), sub("C", "canceled", 7_000, "canceled")],
        ("U", "U2"),
    ),
    "past due told twice with two dates, renewed, canceled": (
        [START, sub("PD", "past_due", 3_000, "past_due"),
         sub("PD2", "past_due", 3_500, "past_due"), sub("U", "updated", 5_000, "active"),
         sub("C", "canceled", 7_000, "canceled")],
        ("PD", "PD2"),
    ),
    "paused and resumed, the pause told twice": (
        [START, sub("P", "updated", 3_000, "paused"), sub("P2", "updated", 3_000, "paused"),
         sub("R", "updated", 5_000, "active"), sub("C", "canceled", 7_000, "canceled")],
        ("P", "P2"),
    ),
    # two moves to active, a pause between them, which came last: until it came they were
    # one change told once; then each is a change of its own, told
    "renewed, paused and resumed, the pause late": (
        [START, sub("PD", "past_due", 3_000, "past_due"), sub("U", "updated", 5_000, "active"),
         sub("P", "updated", 6_000, "paused"), sub("R", "updated", 7_000, "active"),
         sub("C", "canceled", 9_000, "canceled")],
        None,
    ),
}  # fmt: skip


async def _told(
    harness: Any, order: tuple[dict[str, Any], ...], pair: tuple[str, str] | None
) -> dict[str, Any]:
    project_id, ledger, tx = await _echo_owned_tx(harness)
    tx.update(kind="subscription", interval="month")
    await ledger.submit(ledger.tx_ops(tx)).wait()
    for event in order:
        fields = {"refs": [tx["providerRef"]], "amount": tx["amount"], "currency": "EUR", **event}
        await harness.call(project_id, delivery(**fields))
    prefix = keys.history(project_id, tx["id"])
    stored = [
        await ledger.stored_event(k[len(prefix) :].decode())
        for (k, _) in await harness.ctx.store.scan(prefix, limit=100)
    ]
    by_id = {e["id"]: e for e in stored if e}
    by_provider = {e["providerEventId"]: e for e in by_id.values() if e.get("provider") == "echo"}
    told = [e for e in by_provider.values() if not e.get("duplicateOf")]
    twins = (by_provider[pair[0]], by_provider[pair[1]]) if pair else ()
    record = await ledger.tx(tx["id"])
    sub = (
        await ledger.subscription(record["subscriptionId"])
        if record.get("subscriptionId")
        else None
    )
    return {
        "told": sorted(Counter(e["type"] for e in told).items()),
        # one of the two tellings of one change is history on the other (whichever came first)
        "twins": sorted(_said(e, by_id, {t["id"] for t in twins}) for e in twins),
        "record": record["status"],
        "sub": sub["status"] if sub else None,
    }


def _said(event: dict[str, Any], by_id: dict[str, Any], twins: set[str]) -> str:
    first = event.get("duplicateOf")
    if not first:
        return "told"
    return "twin" if first in twins else str(by_id[first]["providerEventId"])


@pytest.mark.parametrize("name", sorted(STORIES))
async def test_each_subscription_change_is_told_once_in_any_order(harness, echo, name):
    events, pair = STORIES[name]
    ends: dict[str, list[tuple[str, ...]]] = {}
    for order in itertools.permutations(events):
        end = await _told(harness, order, pair)
        ends.setdefault(repr(end), []).append(tuple(e["id"] for e in order))
    assert len(ends) == 1, "\n".join(f"{end}: {orders[:3]}" for end, orders in ends.items())
    (end,) = ends
    # each change once: the payment, and each status the subscription took after it
    moves = Counter(e["type"] for e in events[1:] if not pair or e["id"] != pair[1])
    assert f"'told': {sorted({'payment.succeeded': 1, **moves}.items())}" in end
    assert "'sub': 'canceled'" in end
    assert "'twins': ['told', 'twin']" in end if pair else "'twins': []" in end
