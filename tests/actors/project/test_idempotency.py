"""``Idempotency-Key`` on checkout, through the actor on a real store."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
import trio
from actors.project.harness import EchoProvider
from support.waits import until
from trio.testing import wait_all_tasks_blocked

from edge.actors import messages as m
from edge.actors.project.checkout import FIRST_CALL_MARGIN_S
from edge.errors import Conflict, Unavailable
from edge.providers.registry import PROVIDERS
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


async def test_a_request_cut_short_is_taken_up_by_its_retry_for_the_same_transaction(harness, echo):
    """The first request made its transaction, then its actor was lost (a crash, a lease
    lost) while the provider was asked: the retry asks again for that same transaction (the
    provider's call is idempotent by its id) and both get one answer; never a second one."""
    project_id = await harness.project("echo")
    EchoProvider.checkout_gate = held = trio.Event()
    first: list[dict] = []

    async def checkout() -> None:
        first.append(await harness.call(project_id, _echo_checkout("k1")))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(checkout)
        [tx_id] = await until(lambda: EchoProvider.checkouts, what="the provider is asked")
        del harness.registry._entries[project_id]  # the actor is gone: its in-flight too
        EchoProvider.checkout_gate = None
        again = await harness.call(project_id, _echo_checkout("k1"))
        held.set()
    assert again["txId"] == tx_id == first[0]["txId"]
    assert EchoProvider.checkouts == [tx_id, tx_id]  # asked again, for the same transaction
    assert EchoProvider.again == [False, True]  # saying so: what it made is asked for first
    assert len(await harness.ctx.store.scan(keys.prefix(project_id, keys.TRANSACTION))) == 1
    replayed = await harness.registry.call(project_id, _echo_checkout("k1"))
    assert replayed.value["txId"] == tx_id and replayed.headers == {"Idempotent-Replayed": "true"}


def _echo_checkout(key: str) -> m.StartCheckout:
    return m.StartCheckout("echo", "book", {}, 1, "test", idempotency_key=key, body_hash="h1")


async def test_a_cut_short_checkout_at_an_unkeyed_provider_is_taken_up_after_its_call_had_its_time(
    harness, echo, monkeypatch
):
    """Where the provider honours no idempotency key (BTCPay, Paddle), the retry asks what the
    first request made; the first call may still be making it, so the retry is told to come
    back (retryable, ``Retry-After``) until that call has had its time, then takes it up."""
    monkeypatch.setitem(PROVIDERS, "echo", replace(echo, checkout_keyed=False))
    project_id = await harness.project("echo")
    EchoProvider.checkout_gate = trio.Event()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(harness.call, project_id, _echo_checkout("k1"))
        [tx_id] = await until(lambda: EchoProvider.checkouts, what="the provider is asked")
        del harness.registry._entries[project_id]  # the actor is gone: its in-flight too
        nursery.cancel_scope.cancel()  # (and the first request with it)
    with trio.fail_after(60):  # (taken up at once, it would wait on the gate)
        with pytest.raises(Unavailable) as early:
            await harness.call(project_id, _echo_checkout("k1"))
    wait_s = int(early.value.headers["Retry-After"])
    limit_s = harness.ctx.settings.provider_timeout_s + FIRST_CALL_MARGIN_S
    assert early.value.retryable and 0 < wait_s <= math.ceil(limit_s)
    assert EchoProvider.checkouts == [tx_id]  # not asked again yet
    EchoProvider.checkout_gate = None
    real = harness.ctx.clock_ms
    harness.ctx.clock_ms = lambda: real() + int(limit_s * 1000)
    again = await harness.call(project_id, _echo_checkout("k1"))
    assert again["txId"] == tx_id
    assert EchoProvider.checkouts == [tx_id, tx_id] and EchoProvider.again == [False, True]
