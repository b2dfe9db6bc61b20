"""Convergence through the real node (CONTRACT 2), for every provider: each of the provider's
event stories (tests/support/stories), in every order of its deliveries (or a sample) and with
deliveries repeated as the provider repeats them, ends where in-order delivery ends (the
transaction's status and version, the subscription's, and whether the merchant must look); the
versions seen after each delivery never decrease; each event is stored once; and the merchant
is told the same changes, each once."""

from __future__ import annotations

import itertools
import random
from collections import Counter
from typing import Any

import pytest
from contract.drivers import DRIVERS, Driver, Played, driven
from support.orders import delivery_orders

STORIES = [
    pytest.param(provider, name, id=f"{provider}: {name}")
    for provider in driven()
    # a provider without a driver still gets one case, which its missing driver fails
    for name in (DRIVERS[provider].stories if provider in DRIVERS else ["no driver"])
]


async def deliver(driver: Driver, played: Played, order: list[int]) -> list[tuple[int, int, str]]:
    """Deliver in this order; (version, subscription version, status) after each."""
    seen = []
    for index in order:
        await driver.delivered(played.body(index))
        status = await driver.status(played.tx)
        sub_version = 0
        if status.get("subscriptionId"):
            sub_version = (await driver.status(status["subscriptionId"]))["version"]
        seen.append((status["version"], sub_version, status["status"]))
    return seen


# A refund is told when it adds to the money given back: Stripe's total of 12.00 after one of
# 25.00 adds nothing (history), where in order it was told; what the refunds add up to is held
# by the record's status and tests/contract/test_refund_sequences.py.
_REFUNDS = {"payment.refunded", "payment.partially_refunded"}


def _told(record: dict[str, Any]) -> list[tuple[str, int]]:
    """The changes the merchant was told of (CONTRACT 4.3a: one change, one event): how many
    events of each type, refunds aside, the transaction's feed holds that repeat no other."""
    told = [e["type"] for e in record["events"] if not e.get("duplicateOf")]
    return sorted(Counter(kind for kind in told if kind not in _REFUNDS).items())


@pytest.mark.parametrize(("provider", "name"), STORIES)
async def test_every_order_ends_where_in_order_delivery_ends(driver: Driver, name: str) -> None:
    story = driver.stories[name]
    await driver.story_setup()
    played = await driver.play(name)
    in_order = await deliver(driver, played, list(range(played.count)))
    final = in_order[-1]
    assert (final[2], final[0]) == story.end
    record = await driver.record(played.tx)
    if story.sub_end:
        sub = await driver.status(record["subscriptionId"])
        assert (sub["status"], sub["version"]) == story.sub_end, (sub, in_order)
    attention = record["needsAttention"]
    told = _told(record)
    if story.attention is not None:
        assert attention is story.attention
    rng = random.Random(name)
    for order in delivery_orders(played.count, rng, samples=driver.samples):
        played = await driver.play(name)
        seen = await deliver(driver, played, order)
        assert seen[-1] == final, (name, order, seen)
        assert all(a[0] <= b[0] and a[1] <= b[1] for a, b in itertools.pairwise(seen)), (
            order,
            seen,
        )
        record = await driver.record(played.tx)
        assert record["needsAttention"] is attention, (order, record)
        brief = [(e["type"], e["providerEventId"], e.get("duplicateOf")) for e in record["events"]]
        assert _told(record) == told, (order, _told(record), told, brief)
        await driver.stored_once(played, record, story)
