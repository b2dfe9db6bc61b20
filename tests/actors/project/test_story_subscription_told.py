"""A subscription's changes are told once each, whatever order the provider's events come in
(CONTRACT 4.3a, one change, one event): a second telling of a status change is history on
the first, also when it came after the subscription moved on, or waited for the provider id
it names. On the real actor and store."""

from __future__ import annotations

import itertools
from collections import Counter
from typing import Any

from actors.project.harness import delivery
from actors.project.test_intake import _echo_owned_tx

from edge.store import keys

SUB = ["sub_1"]  # the provider's subscription: linked by the first payment, which starts it

EVENTS = [
    dict(id="S", type="payment.succeeded", at=1_000, status="succeeded", starts=True,
         sub="active", subRef="sub_1"),
    # these name only the subscription: before the payment they wait unmatched
    dict(id="PD", type="subscription.past_due", at=3_000, sub="past_due", refs=SUB),
    dict(id="U", type="subscription.updated", at=5_000, sub="active", refs=SUB),
    # the same change again under another event id (a webhook and a read of the provider)
    dict(id="U2", type="subscription.updated", at=5_000, sub="active", refs=SUB),
    dict(id="C", type="subscription.canceled", at=7_000, sub="canceled", refs=SUB),
]  # fmt: skip


async def _told(harness: Any, order: tuple[dict[str, Any], ...]) -> dict[str, Any]:
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
    twins = by_provider["U"], by_provider["U2"]
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


async def test_each_subscription_change_is_told_once_in_any_order(harness, echo):
    ends: dict[str, list[tuple[str, ...]]] = {}
    for order in itertools.permutations(EVENTS):
        end = await _told(harness, order)
        ends.setdefault(repr(end), []).append(tuple(e["id"] for e in order))
    assert len(ends) == 1, "\n".join(f"{end}: {orders[:3]}" for end, orders in ends.items())
    (end,) = ends
    assert "('subscription.past_due', 1)" in end and "('subscription.canceled', 1)" in end
    assert "('subscription.updated', 1)" in end
    assert "'sub': 'canceled'" in end and "'twins': ['told', 'twin']" in end
