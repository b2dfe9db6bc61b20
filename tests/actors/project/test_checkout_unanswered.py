"""A checkout whose provider's answer is never recorded (its node stopped during the call, or
the project moved to another node) does not stay pending for ever (CONTRACT 4.2): an expiry
owed is written with the pending transaction, deleted with the answer, and ends it canceled
once the call has had its time and a retry with its key had the chance to take it up."""

from __future__ import annotations

from typing import Any

import pytest
import trio
from actors.project.harness import EchoProvider, Harness
from support.waits import until

from edge.actors import messages as m
from edge.errors import ContractError, ProviderError
from edge.store import keys, outbox


def _checkout(key: str | None = "k1") -> m.StartCheckout:
    return m.StartCheckout("echo", "book", {}, 1, "test", idempotency_key=key, body_hash="h1")


async def _guards(harness: Harness, tx_id: str) -> list[dict[str, Any]]:
    """The transaction's pending unanswered guards, as the follow-up worker would find them."""
    far = harness.ctx.clock_ms() + 10**9
    return [
        entry
        for entry in await outbox.due(harness.ctx.store, far, limit=100)
        if entry["txId"] == tx_id and entry["params"].get(outbox.UNANSWERED)
    ]


async def _tx(harness: Harness, project_id: str, tx_id: str) -> dict[str, Any]:
    stored = await harness.ctx.store.get(keys.record(project_id, keys.TRANSACTION, tx_id))
    assert stored is not None
    return dict(stored)


async def _cut_short(harness: Harness, project_id: str) -> str:
    """A keyed checkout whose actor is gone while its provider is asked; its transaction id."""
    EchoProvider.checkout_gate = trio.Event()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(harness.call, project_id, _checkout())
        [tx_id] = await until(lambda: EchoProvider.checkouts, what="the provider is asked")
        del harness.registry._entries[project_id]  # noqa: SLF001 (the actor, and its call, gone)
        nursery.cancel_scope.cancel()
    EchoProvider.checkout_gate = None
    return str(tx_id)


async def test_an_answered_checkout_owes_no_unanswered_end(harness, echo):
    project_id = await harness.project("echo")
    made = await harness.call(project_id, _checkout(None))
    assert await _guards(harness, made["txId"]) == []
    said = await harness.call(project_id, m.ExpireCheckout(made["txId"], unanswered=True))
    assert "answer was recorded" in said
    assert (await _tx(harness, project_id, made["txId"]))["status"] == "pending"


async def test_a_checkout_never_answered_ends_canceled_and_its_key_says_so(harness, echo):
    project_id = await harness.project("echo")
    tx_id = await _cut_short(harness, project_id)
    (guard,) = await _guards(harness, tx_id)
    limit_s = harness.ctx.settings.provider_timeout_s
    assert guard["dueAt"] > guard["createdAt"] + limit_s * 1000  # after the call's own time
    said = await harness.call(project_id, m.ExpireCheckout(tx_id, unanswered=True))
    assert said.startswith("canceled")
    tx = await _tx(harness, project_id, tx_id)
    assert tx["status"] == "canceled" and "never came" in tx["reason"]
    with pytest.raises(ProviderError) as retried:  # the key's retry: the same end
        await harness.call(project_id, _checkout())
    assert "never came" in retried.value.message
    assert EchoProvider.checkouts == [tx_id]  # the provider was not asked again


async def test_a_checkout_taken_up_again_is_not_ended_while_its_provider_is_asked(harness, echo):
    project_id = await harness.project("echo")
    tx_id = await _cut_short(harness, project_id)
    EchoProvider.checkout_gate = asked = trio.Event()
    async with trio.open_nursery() as nursery:
        answers: list[Any] = []

        async def retry() -> None:
            answers.append(await harness.call(project_id, _checkout()))

        nursery.start_soon(retry)
        await until(lambda: len(EchoProvider.checkouts) == 2, what="the retry asks again")
        with pytest.raises(ContractError) as early:
            await harness.call(project_id, m.ExpireCheckout(tx_id, unanswered=True))
        assert early.value.code == "unavailable" and early.value.retryable
        asked.set()
    assert answers[0]["txId"] == tx_id
    assert await _guards(harness, tx_id) == []  # the answer recorded deleted it
