"""Opening a checkout, through the actor on a real store: the pending transaction is durable
before the provider is called, and the answer after the provider's outcome is."""

from __future__ import annotations

import pytest
from actors.project.harness import EchoProvider

from edge.actors import messages as m
from edge.errors import Conflict, InvalidRequest, NotFound, ProviderError
from edge.store import keys


async def test_a_checkout_stores_the_transaction_its_event_and_its_reference(harness):
    project_id = await harness.project("manual")
    answer = await harness.call(
        project_id, m.StartCheckout("manual", "book", {"customerRef": "u1"}, 2, "test")
    )
    tx = await harness.ctx.store.get(keys.record(project_id, keys.TRANSACTION, answer["txId"]))
    assert (tx["status"], tx["amount"], tx["customerRef"]) == ("pending", 3998, "u1")
    assert answer["reference"] == tx["reference"]
    index = keys.named(project_id, keys.REFERENCE, "", tx["reference"])
    assert await harness.ctx.store.get_raw(index) == tx["id"].encode()
    history = await harness.ctx.store.scan(keys.history(project_id, tx["id"]))
    assert len(history) == 1  # checkout.created


async def test_a_used_transaction_id_is_a_conflict(harness):
    project_id = await harness.project("manual")
    answer = await harness.call(project_id, m.StartCheckout("manual", "book", {}, 1, "test"))
    with pytest.raises(Conflict):
        await harness.call(
            project_id, m.StartCheckout("manual", "book", {}, 1, "test", tx_id=answer["txId"])
        )


async def test_refusals_before_anything_is_written(harness):
    project_id = await harness.project("manual")
    with pytest.raises(NotFound) as info:
        await harness.call(project_id, m.StartCheckout("echo", "book", {}, 1, "test"))
    assert info.value.code == "provider_not_enabled"
    with pytest.raises(NotFound) as info:
        await harness.call(project_id, m.StartCheckout("manual", "nope", {}, 1, "test"))
    assert info.value.code == "product_not_found"
    with pytest.raises(InvalidRequest) as bad_url:
        await harness.call(
            project_id,
            m.StartCheckout(
                "manual", "book", {}, 1, "test", success_url="https://elsewhere.example/"
            ),
        )
    assert bad_url.value.code == "url_not_allowed"
    assert await harness.ctx.store.scan(keys.prefix(project_id, keys.TRANSACTION)) == []


async def test_the_actor_is_idle_once_the_checkout_is_answered(harness):
    project_id = await harness.project("manual")
    await harness.call(project_id, m.StartCheckout("manual", "book", {}, 1, "test"))
    assert harness.registry._entries[project_id].actor.idle()


@pytest.mark.parametrize(
    "url",
    ["javascript:alert(1)", "data:text/html,x", "http://evil.example/c", "https://u@x.example/"],
)
async def test_an_unsafe_checkout_address_never_reaches_the_buyer(harness, echo, url, monkeypatch):
    project_id = await harness.project("echo")
    monkeypatch.setattr(EchoProvider, "checkout_url", url)
    with pytest.raises(ProviderError) as refused:
        await harness.call(project_id, m.StartCheckout("echo", "book", {}, 1, "test"))
    assert refused.value.message == "echo did not create the checkout; try again."
    (tx,) = [
        record
        for key, _ in await harness.ctx.store.scan(keys.prefix(project_id, keys.TRANSACTION))
        if (record := await harness.ctx.store.get(key)) is not None
    ]
    assert tx["status"] == "canceled" and "checkout" not in tx
    assert "unsafe" in tx["reason"]  # the merchant learns why; the buyer does not


async def test_a_safe_checkout_address_is_handed_out(harness, echo):
    project_id = await harness.project("echo")
    answer = await harness.call(project_id, m.StartCheckout("echo", "book", {}, 1, "test"))
    assert answer["url"] == "https://pay.example/c/1"
