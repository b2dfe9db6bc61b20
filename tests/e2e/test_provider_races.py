"""What happens while a provider call is in flight, and when the disk refuses a commit."""

from __future__ import annotations

import httpx
import pytest
import trio
from support.client import bearer, manual_shop, post_checkout
from support.stripe_shop import stripe_shop
from support.waits import sending

TX = "tx_01M7YS2H2CXEBWK64PPXXP5WHD"


async def _events_of(http, shop, tx_id):
    tx = (
        await http.get(
            f"/api/projects/{shop.project_id}/transactions/{tx_id}", headers=bearer(shop.test_key)
        )
    ).json()
    return [e["type"] for e in tx["events"]]


def to_the_provider(request: httpx.Request) -> bool:
    return request.url.path.startswith("/v1/")  # the node's calls to Stripe (the simulator)


@pytest.mark.parametrize("provider_fails", [False, True])
async def test_a_cancel_during_the_provider_call_stands(node, admin, http, sim, provider_fails):
    shop = await stripe_shop(admin, sim)
    sim.delay_s = 0.5  # the provider thinks this long about each call
    sim.fail_next_requests = 1 if provider_fails else 0
    answers = []

    async def checkout() -> None:
        answers.append(await post_checkout(http, "stripe", shop, "book", txId=TX))

    async with trio.open_nursery() as nursery:
        with sending(node.ctx.http, to_the_provider) as called:
            nursery.start_soon(checkout)
            await called.wait()  # so the pending transaction is stored; the provider thinks
        canceled = await http.post(
            f"/api/projects/{shop.project_id}/transactions/{TX}/cancel",
            headers=bearer(shop.test_key),
        )
        assert canceled.json()["status"] == "canceled"
    # the checkout ended before the provider answered: its address is handed to no one
    assert answers[0].status_code == 502, answers[0].text
    assert "ended" in answers[0].text or provider_fails
    status = (await http.get(f"/status/{shop.project_id}/{TX}")).json()
    assert (status["status"], status["version"]) == ("canceled", 2)  # not moved again, nor back
    assert (await _events_of(http, shop, TX)).count("checkout.canceled") == 1


async def test_an_idempotent_answer_is_kept_across_an_actor_rebuild(node, admin, http, sim):
    shop = await stripe_shop(admin, sim)
    sim.delay_s = 0.5
    headers = {**bearer(shop.test_key), "Idempotency-Key": "order-7"}
    answers = []

    async def checkout() -> None:
        answers.append(
            await http.post(
                f"/api/checkout/stripe/{shop.project_id}",
                json={"productId": "book"},
                headers=headers,
            )
        )

    async with trio.open_nursery() as nursery:
        with sending(node.ctx.http, to_the_provider) as called:
            nursery.start_soon(checkout)
            await called.wait()  # the provider thinks
        del node.ctx.registry._entries[
            shop.project_id
        ]  # evicted mid-call: a fresh actor finishes it
    sim.delay_s = 0
    again = await http.post(
        f"/api/checkout/stripe/{shop.project_id}", json={"productId": "book"}, headers=headers
    )
    assert answers[0].status_code == again.status_code == 201
    assert again.json() == answers[0].json() and again.headers["idempotent-replayed"] == "true"


async def test_a_refused_commit_is_503_and_nothing_of_it_shows(node, admin, http):
    shop = await manual_shop(admin)
    pid = shop.project_id
    tx = (await http.post(f"/api/checkout/manual/{pid}", json={"productId": "book"})).json()["txId"]

    def full_disk(group):  # type: ignore[no-untyped-def]
        raise OSError(28, "No space left on device")

    with node.ctx.writer.inject(full_disk):
        refused = await http.post(
            f"/api/projects/{pid}/transactions/{tx}/mark-paid", headers=bearer(shop.live_key)
        )
    assert (refused.status_code, refused.json()["error"]["code"]) == (503, "unavailable")
    assert refused.json()["error"]["retryable"] is True
    # the actor read its state again from the store: the change that never landed is gone
    status = (await http.get(f"/status/{pid}/{tx}")).json()
    assert (status["status"], status["version"]) == ("pending", 1)
    again = await http.post(
        f"/api/projects/{pid}/transactions/{tx}/mark-paid", headers=bearer(shop.live_key)
    )
    assert again.status_code == 200 and again.json()["version"] == 2
