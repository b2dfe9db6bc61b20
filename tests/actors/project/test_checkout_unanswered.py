"""A checkout whose provider's answer is never recorded (its node stopped during the call, or
the project moved to another node) does not stay pending for ever (CONTRACT 4.2): an end owed
is written with the pending transaction, and once the call has had its time and a retry with
its key had the chance to take it up, a checkout still without its answer ends canceled; one
answered by then is left as it is. An answer that comes for a checkout that ended meanwhile
is handed to no one."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
import trio
from actors.project.harness import BOOK, EchoProvider, Harness
from support.waits import until

from edge.actors import messages as m
from edge.actors.project import checkout
from edge.errors import ContractError, ProviderError
from edge.providers.registry import PROVIDERS
from edge.store import keys, outbox


def _checkout(key: str | None = "k1", product: str = "book") -> m.StartCheckout:
    return m.StartCheckout("echo", product, {}, 1, "test", idempotency_key=key, body_hash="h1")


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


async def _cut_short(harness: Harness, project_id: str, product: str = "book") -> str:
    """A keyed checkout whose actor is gone while its provider is asked; its transaction id."""
    EchoProvider.checkout_gate = trio.Event()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(harness.call, project_id, _checkout(product=product))
        [tx_id] = await until(lambda: EchoProvider.checkouts, what="the provider is asked")
        del harness.registry._entries[project_id]  # noqa: SLF001 (the actor, and its call, gone)
        nursery.cancel_scope.cancel()
    EchoProvider.checkout_gate = None
    return str(tx_id)


async def test_an_answered_checkout_is_left_as_it_is_when_its_guard_comes(harness, echo):
    project_id = await harness.project("echo")
    made = await harness.call(project_id, _checkout(None))
    (guard,) = await _guards(harness, made["txId"])
    limit_s = harness.ctx.settings.provider_timeout_s
    assert guard["dueAt"] > guard["createdAt"] + limit_s * 1000  # after the call's own time
    said = await harness.call(project_id, m.ExpireCheckout(made["txId"], unanswered=True))
    assert "answer was recorded" in said
    assert (await _tx(harness, project_id, made["txId"]))["status"] == "pending"


async def test_a_checkout_never_answered_ends_canceled_and_its_key_says_so(harness, echo):
    project_id = await harness.project("echo")
    tx_id = await _cut_short(harness, project_id)
    assert len(await _guards(harness, tx_id)) == 1
    said = await harness.call(project_id, m.ExpireCheckout(tx_id, unanswered=True))
    assert said.startswith("canceled")
    tx = await _tx(harness, project_id, tx_id)
    assert tx["status"] == "canceled" and "never came" in tx["reason"]
    with pytest.raises(ProviderError) as retried:  # the key's retry: the same end
        await harness.call(project_id, _checkout())
    assert "never came" in retried.value.message and not retried.value.retryable
    assert EchoProvider.checkouts == [tx_id]  # the provider was not asked again


async def test_a_subscription_checkout_never_answered_ends_too(harness, echo):
    """The payment table is every checkout's (a subscription's first payment too): a
    subscription's pending checkout is ended like any other."""
    project_id = await harness.project("echo")
    plan = {**BOOK, "id": "plan", "kind": "subscription", "interval": "month"}
    await harness.call(project_id, m.PutProduct(plan))
    tx_id = await _cut_short(harness, project_id, product="plan")
    said = await harness.call(project_id, m.ExpireCheckout(tx_id, unanswered=True))
    assert said.startswith("canceled")
    assert (await _tx(harness, project_id, tx_id))["status"] == "canceled"


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
    said = await harness.call(project_id, m.ExpireCheckout(tx_id, unanswered=True))
    assert "answer was recorded" in said


async def test_an_answer_for_a_checkout_that_ended_meanwhile_is_handed_to_no_one(harness, echo):
    """The merchant canceled the checkout while its provider was asked: the checkout address
    that comes afterwards is not handed out, and the key remembers the end."""
    project_id = await harness.project("echo")
    EchoProvider.checkout_gate = asked = trio.Event()
    async with trio.open_nursery() as nursery:
        failed: list[ContractError] = []

        async def checkout() -> None:
            try:
                await harness.call(project_id, _checkout())
            except ContractError as error:
                failed.append(error)

        nursery.start_soon(checkout)
        [tx_id] = await until(lambda: EchoProvider.checkouts, what="the provider is asked")
        await harness.call(project_id, m.CancelTx(tx_id, "test"))
        asked.set()
    assert failed and "ended (canceled)" in failed[0].message
    tx = await _tx(harness, project_id, tx_id)
    assert tx["status"] == "canceled" and tx.get("providerRef") is None
    with pytest.raises(ProviderError):
        await harness.call(project_id, _checkout())


async def test_an_unkeyed_call_left_no_time_by_the_store_is_not_made(harness, echo, monkeypatch):
    """Where the provider honours no key, its call is held to the time a key's retry waits
    out: one whose time went on making the checkout durable is not made at all (and the
    provider is not blamed for it)."""
    monkeypatch.setitem(PROVIDERS, "echo", replace(echo, checkout_keyed=False))
    # as if making the checkout durable took more than all of the call's time
    monkeypatch.setattr(checkout, "MIN_CALL_SHARE", 1.5)
    project_id = await harness.project("echo")
    with pytest.raises(ContractError) as refused:
        await harness.call(project_id, _checkout(None))
    assert refused.value.code == "unavailable" and refused.value.retryable
    assert EchoProvider.checkouts == []


async def test_a_subscription_checkout_the_provider_never_expires_is_expired_at_its_time(
    harness, echo
):
    """PayPal says nothing of a subscription's approval page left unused: the node's own end
    of the checkout applies to a subscription's checkout as to a payment's."""
    project_id = await harness.project("echo")
    plan = {**BOOK, "id": "plan", "kind": "subscription", "interval": "month"}
    await harness.call(project_id, m.PutProduct(plan))
    made = await harness.call(project_id, _checkout(None, product="plan"))
    said = await harness.call(project_id, m.ExpireCheckout(made["txId"]))
    assert said.startswith("expired")
    assert (await _tx(harness, project_id, made["txId"]))["status"] == "expired"
