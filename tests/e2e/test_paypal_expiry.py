"""PayPal says nothing about an order that is never approved, so the node expires its own
pending PayPal checkouts (CONTRACT 4.3): the checkout's answer owes a durable expiry at its
``expiresAt``, and when it comes the transaction is expired and nothing is captured for it."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
import trio
from e2e.test_paypal_flow import until
from support.client import bearer, post_checkout
from support.pages import press
from support.paypal_shop import paypal_shop
from support.waits import bound
from support.waits import until as wait_until

from edge.actors import messages as m
from edge.actors import sync
from edge.actors.project import checkout as checkout_actor
from edge.domain.timefmt import parse_iso_ms
from edge.errors import Unavailable
from edge.node import _Projects
from edge.store import outbox


@pytest.fixture
async def buyer() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient() as client:
        yield client


async def test_a_checkout_never_approved_is_expired_by_the_node(admin, http, node, paypal):
    shop = await paypal_shop(admin, paypal)
    answer = await post_checkout(http, "paypal", shop, "book")
    tx_id, expires_ms = answer.json()["txId"], parse_iso_ms(answer.json()["expiresAt"])
    store = node.ctx.store
    # (besides the node's looks at the checkout with PayPal while it is open, outbox.SYNC, and
    # the end owed had PayPal's answer never been recorded, which finds it recorded)
    owed = [
        e
        for e in await outbox.due(store, expires_ms, 100)
        if e["txId"] == tx_id
        and e["action"] != outbox.SYNC
        and not e["params"].get(outbox.UNANSWERED)
    ]
    assert [(e["action"], e["dueAt"]) for e in owed] == [(outbox.EXPIRE, expires_ms)]
    early = await outbox.due(store, expires_ms - 1, 100)
    assert not [
        e
        for e in early
        if e["txId"] == tx_id
        and e["action"] == outbox.EXPIRE
        and not e["params"].get(outbox.UNANSWERED)
    ]

    # what the worker does at that time
    said = await node.ctx.registry.call(shop.project_id, m.ExpireCheckout(tx_id))
    assert said.startswith("expired at ")
    status = (await http.get(f"/status/{shop.project_id}/{tx_id}")).json()
    assert (status["status"], status["version"]) == ("expired", 2)
    target = await node.ctx.registry.call(shop.project_id, m.FollowUpTarget(tx_id, "test"))
    assert target is None  # an ended checkout is never captured
    again = await node.ctx.registry.call(shop.project_id, m.ExpireCheckout(tx_id))
    assert again == "nothing to expire: the transaction is expired"


async def test_an_ended_checkout_is_not_expired_again(admin, http, node, paypal):
    shop = await paypal_shop(admin, paypal)
    answer = await post_checkout(http, "paypal", shop, "book")
    tx_id = answer.json()["txId"]
    await http.post(
        f"/api/projects/{shop.project_id}/transactions/{tx_id}/cancel",
        headers=bearer(shop.test_key),
    )
    said = await node.ctx.registry.call(shop.project_id, m.ExpireCheckout(tx_id))
    assert said == "nothing to expire: the transaction is canceled"


async def test_an_order_approved_at_the_last_minute_is_asked_about_not_expired(
    admin, http, node, paypal, buyer
):
    """The buyer approved as the checkout's time ran out, the approval webhook was lost and
    the buyer never came back: at its expiry the node asks PayPal first, learns the approval,
    and captures it; the checkout is paid, never expired."""
    shop = await paypal_shop(admin, paypal)
    paypal.webhook_faults.drop()
    answer = await post_checkout(http, "paypal", shop, "book")
    tx_id = answer.json()["txId"]
    await press(buyer, answer.json()["url"], "Approve")  # its way back is never followed
    projects = _Projects(node.ctx.registry, node.ctx.syncer)
    with pytest.raises(Unavailable):  # the capture owed decides; the expiry is tried later
        await projects.expire(shop.project_id, tx_id)
    await until(http, shop, tx_id, "succeeded")
    said = await projects.expire(shop.project_id, tx_id)
    assert said == "nothing to expire: the transaction is succeeded"


async def test_an_approval_whose_capture_is_still_owed_is_not_expired(
    admin, http, node, paypal, buyer
):
    """PayPal told the approval and has not answered the capture yet (it is retried later):
    the checkout's time running out meanwhile does not expire it, which would drop the
    capture and the buyer's payment with it."""
    shop = await paypal_shop(admin, paypal)
    answer = await post_checkout(http, "paypal", shop, "book")
    tx_id = answer.json()["txId"]
    paypal.hold_captures = True  # PayPal answers captures 503: the capture waits
    await press(buyer, answer.json()["url"], "Approve")  # the approval's webhook comes

    async def owed() -> bool:
        queued = await outbox.due(node.ctx.store, 2**62, 100)
        return any(e["txId"] == tx_id and e["action"] == "capture" for e in queued)

    await wait_until(owed, what="the approval told")
    with pytest.raises(Unavailable):
        await node.ctx.registry.call(shop.project_id, m.ExpireCheckout(tx_id))
    status = (await http.get(f"/status/{shop.project_id}/{tx_id}")).json()
    assert status["status"] == "pending"
    paypal.hold_captures = False


@pytest.mark.parametrize("how", ["declined", "never approved"])
async def test_a_capture_that_has_not_happened_within_the_grace_lets_the_checkout_expire(
    admin, http, node, paypal, buyer, monkeypatch, how
):
    """The buyer was back on the return page, so a capture was owed, and it never happened: the
    funding source was declined (the checkout stays open for another), or the return address
    was opened without approving at PayPal. The checkout's end waits for the capture for a
    while only (an hour; here none), then the checkout expires as any other."""
    shop = await paypal_shop(admin, paypal)
    answer = await post_checkout(http, "paypal", shop, "book")
    tx_id = answer.json()["txId"]
    if how == "declined":
        back = await press(buyer, answer.json()["url"], "Decline")
        await buyer.get(back)
    else:
        back = await http.get(f"/return/paypal/{shop.project_id}/{tx_id}")
        assert back.status_code in (200, 303), back.text
    projects = _Projects(node.ctx.registry, node.ctx.syncer)
    with pytest.raises(Unavailable):  # within the grace: the capture owed decides
        await projects.expire(shop.project_id, tx_id)
    monkeypatch.setattr(checkout_actor, "OWED_GRACE_MS", 0)
    said = await projects.expire(shop.project_id, tx_id)
    assert said.startswith("expired at "), said


async def test_an_expiry_never_holds_the_follow_up_queue_while_paypal_says_wait(
    admin, http, node, paypal
):
    """The follow-up worker runs one entry at a time: an expiry whose PayPal account was told
    to wait (a 429 with Retry-After) is tried again later at once, not after waiting out the
    pacing with every capture and refund queued behind it."""
    shop = await paypal_shop(admin, paypal)
    answer = await post_checkout(http, "paypal", shop, "book")
    tx_id = answer.json()["txId"]
    target = await node.ctx.registry.call(shop.project_id, m.SyncTarget(tx_id, None))
    node.ctx.syncer._pacing.told_to_wait(sync._account(target), 600)  # noqa: SLF001
    projects = _Projects(node.ctx.registry, node.ctx.syncer)
    with trio.fail_after(bound(sync.ASK_AT_EXPIRY_S)), pytest.raises(Unavailable):
        await projects.expire(shop.project_id, tx_id)
