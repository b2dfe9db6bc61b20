"""``Idempotency-Key`` on checkout, through the actor on a real store."""

from __future__ import annotations

import pytest
import trio
from trio.testing import wait_all_tasks_blocked

from edge.actors import messages as m
from edge.errors import Conflict
from edge.store import keys


def _checkout(key: str, body_hash: str = "h1") -> m.StartCheckout:
    return m.StartCheckout(
        "manual", "book", {}, 1, "test", idempotency_key=key, body_hash=body_hash
    )


async def test_the_same_key_and_body_replays_the_first_answer(harness):
    project_id = await harness.project("manual")
    first = await harness.registry.call(project_id, _checkout("k1"))
    again = await harness.registry.call(project_id, _checkout("k1"))
    assert again.value == first
    assert again.headers == {"Idempotent-Replayed": "true"}
    assert len(await harness.ctx.store.scan(keys.prefix(project_id, keys.TRANSACTION))) == 1


async def test_the_same_key_with_another_body_is_a_conflict(harness):
    project_id = await harness.project("manual")
    await harness.call(project_id, _checkout("k1"))
    with pytest.raises(Conflict) as info:
        await harness.call(project_id, _checkout("k1", "h2"))
    assert info.value.code == "idempotency_conflict"


async def test_concurrent_requests_with_one_key_make_one_transaction(harness):
    project_id = await harness.project("manual")
    answers = []

    async def checkout() -> None:
        answers.append(await harness.call(project_id, _checkout("k1")))

    async with trio.open_nursery() as nursery:
        for _ in range(3):
            nursery.start_soon(checkout)
            await wait_all_tasks_blocked()
    assert len({answer["txId"] for answer in answers}) == 1
    assert len(await harness.ctx.store.scan(keys.prefix(project_id, keys.TRANSACTION))) == 1


async def test_the_answer_survives_the_actor(harness):
    project_id = await harness.project("manual")
    first = await harness.call(project_id, _checkout("k1"))
    del harness.registry._entries[project_id]  # evicted: a new actor loads from the store
    assert await harness.call(project_id, _checkout("k1")) == first
