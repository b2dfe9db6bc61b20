"""Convergence through the real node (CONTRACT 2), for every provider: each of the provider's
event stories (tests/support/stories), in every order of its deliveries (or a sample) and with
deliveries repeated as the provider repeats them, ends where in-order delivery ends (the
transaction's status and version, the subscription's, and whether the merchant must look); the
versions seen after each delivery never decrease; and each event is stored once."""

from __future__ import annotations

import itertools
import random

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
        await driver.stored_once(played, record, story)
