"""An event stored ``unmatched`` and matched later is one message a ``webhook-id`` (CONTRACT 4.8:
"delivered again only when its earlier delivery was not acknowledged, always under the same
``webhook-id``"): a dispute that comes before the payment's own events is told as ``unmatched``
to an endpoint that takes those, and when the payment links it, it is told as the dispute to
the endpoints that did not have it, never a second time to the one that did.

Through a real node and the Stripe simulator holding the payment's deliveries (late webhooks).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import pytest
import trio
from support.asgi import serve_asgi
from support.client import bearer, post_checkout
from support.merchant import Merchant, add_endpoint
from support.paddle_shop import paddle_shop
from support.stripe_shop import stripe_shop
from support.waits import notifications_settled, until


@pytest.fixture
async def merchants() -> AsyncIterator[list[tuple[Merchant, str]]]:
    servers = [Merchant(), Merchant(), Merchant()]
    async with trio.open_nursery() as nursery:
        urls = [await nursery.start(serve_asgi, server) for server in servers]
        yield [
            (s, u.replace("127.0.0.1", "localhost") + "/hooks")
            for s, u in zip(servers, urls, strict=True)
        ]
        nursery.cancel_scope.cancel()


async def _disputed_before_its_payment(node: Any, admin: Any, http: Any, sim: Any, merchants: Any):
    """A paid checkout whose payment events the simulator holds, and its dispute delivered
    before them; the dispute's ``evt_`` id, the shop and the transaction."""
    (_, wary_url), (_, plain_url), (_, curious_url) = merchants
    shop = await stripe_shop(admin, sim)
    pid = shop.project_id
    both = await add_endpoint(
        admin, pid, url=wary_url, mode="test", types=["unmatched", "payment.disputed"]
    )
    await add_endpoint(admin, pid, url=plain_url, mode="test")
    await add_endpoint(admin, pid, url=curious_url, mode="test", types=["unmatched"])
    checkout = await http.post(
        f"/api/checkout/stripe/{pid}", json={"productId": "book"}, headers=bearer(shop.test_key)
    )
    assert checkout.status_code == 201, checkout.text
    session = checkout.json()["url"].rsplit("/", 1)[-1]
    sim.webhook_faults.hold()  # the payment's own events come late
    await sim.complete(session)
    sim.webhook_faults.clear()
    await sim.dispute(session)  # names only the charge and the intent: nothing linked them yet
    feed = await http.get(f"/api/projects/{pid}/events", headers=bearer(shop.test_key))
    (dispute,) = [e for e in feed.json()["items"] if e["type"] == "unmatched"]
    return shop, checkout.json()["txId"], dispute["id"], both


def _sent(server: Merchant) -> Counter[str]:
    return Counter(headers["webhook-id"] for headers, _ in server.got)


async def test_a_dispute_told_unmatched_is_not_told_again_when_its_payment_links_it(
    node, admin, http, sim, merchants
):
    (wary, _), (plain, _), (curious, _) = merchants
    shop, tx, dispute, _ = await _disputed_before_its_payment(node, admin, http, sim, merchants)
    await wary.wait_for(1)  # told as unmatched, and acknowledged
    assert [(e["id"], e["type"]) for e in wary.events()] == [(dispute, "unmatched")]

    assert set(await sim.release()) == {200}  # the payment's events: they link the dispute
    status = await http.get(f"/status/{shop.project_id}/{tx}")
    assert status.json()["status"] == "disputed"
    await notifications_settled(node)  # what the node will ever send for these is sent

    assert _sent(wary) == {dispute: 1}  # never the same webhook-id again
    assert [(e["id"], e["type"]) for e in curious.events()] == [(dispute, "unmatched")]
    assert max(_sent(plain).values()) == 1
    told = {e["id"]: e["type"] for e in plain.events()}
    assert told[dispute] == "payment.disputed" and "payment.succeeded" in told.values()


async def test_a_dispute_still_owed_when_its_payment_links_it_goes_out_once_as_the_dispute(
    node, admin, http, sim, merchants
):
    (wary, _), _, (curious, _) = merchants
    wary.status = curious.status = 503  # a first attempt fails: the next is 5 s on (4.8)
    shop, tx, dispute, both = await _disputed_before_its_payment(node, admin, http, sim, merchants)
    await wary.wait_for(1)
    await curious.wait_for(1)
    wary.status = curious.status = 200
    assert set(await sim.release()) == {200}
    await notifications_settled(node, timeout_s=30)

    delivered = [e for e in wary.events() if e["id"] == dispute]
    # the failed attempt carried it as it stood; the one that took is the dispute, once
    assert [e["type"] for e in delivered] == ["unmatched", "payment.disputed"]
    attempts = await admin.ok(
        "GET", f"/api/manage/projects/{shop.project_id}/endpoints/{both['endpointId']}/attempts"
    )
    outcomes = Counter(
        (a["eventId"], a["status"]) for a in attempts["items"] if a["eventId"] == dispute
    )
    assert outcomes == {(dispute, 503): 1, (dispute, 200): 1}
    # an endpoint of unmatched events only: matched before it went out, it is not one now
    assert [(e["id"], e["type"]) for e in curious.events()] == [(dispute, "unmatched")]

    async def disputed() -> bool:
        return (await http.get(f"/status/{shop.project_id}/{tx}")).json()["status"] == "disputed"

    await until(disputed, what="the dispute applied")


async def test_a_held_refund_that_refunds_it_all_when_applied_is_told_to_who_takes_that(
    node, admin, http, paddle, merchants
):
    """Two refunds of half the payment come before it (Paddle: "We can't guarantee the order
    of delivery"): both are held and told as partial refunds; when the payment applies them,
    the second is the one that refunded it all. An endpoint of full refunds only is told it
    then, once; the endpoint of partial refunds that had it is not sent it again."""
    (partial, partial_url), (full, full_url), _ = merchants
    shop = await paddle_shop(admin, paddle)
    pid = shop.project_id
    for url, kind in ((partial_url, "payment.partially_refunded"), (full_url, "payment.refunded")):
        await add_endpoint(admin, pid, url=url, mode="test", types=[kind])
    made = await post_checkout(http, "paddle", shop, "ten")
    tx, txn = made.json()["txId"], made.json()["token"]
    paddle.deliveries_paused = True
    try:
        await paddle.pay(txn)
        await paddle.refund(txn, amount=500)
        await paddle.refund(txn, amount=500)
    finally:
        paddle.deliveries_paused = False
    refunds = [d for d in paddle.held if d[1]["event_type"].startswith("adjustment.")]
    payment = [d for d in paddle.held if d not in refunds]
    paddle.held = refunds  # the refunds first: held, and told as they came
    await paddle.release()
    await notifications_settled(node)
    paddle.held = payment
    await paddle.release()
    status = await http.get(f"/status/{pid}/{tx}")
    assert status.json()["status"] == "refunded"
    await notifications_settled(node)

    assert max(_sent(partial).values()) == 1 and max(_sent(full).values()) == 1
    told_full = {e["id"]: e["type"] for e in full.events()}
    assert list(told_full.values()) == ["payment.refunded"]
    (whole,) = told_full
    assert whole in _sent(partial)  # told as a partial refund while it was held
    (told,) = full.events()  # as the record is now: the highest version a merchant keeps
    record = status.json()
    assert (told["status"], told["version"]) == ("refunded", record["version"])
