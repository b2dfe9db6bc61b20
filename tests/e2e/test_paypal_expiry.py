"""PayPal says nothing about an order that is never approved, so the node expires its own
pending PayPal checkouts (CONTRACT 4.3): the checkout's answer owes a durable expiry at its
``expiresAt``, and when it comes the transaction is expired and nothing is captured for it."""

from __future__ import annotations

from support.client import bearer, post_checkout
from support.paypal_shop import paypal_shop

from edge.actors import messages as m
from edge.domain.timefmt import parse_iso_ms
from edge.store import outbox


async def test_a_checkout_never_approved_is_expired_by_the_node(admin, http, node, paypal):
    shop = await paypal_shop(admin, paypal)
    answer = await post_checkout(http, "paypal", shop, "book")
    tx_id, expires_ms = answer.json()["txId"], parse_iso_ms(answer.json()["expiresAt"])
    store = node.ctx.store
    # (besides the node's looks at the checkout with PayPal while it is open, outbox.SYNC)
    owed = [
        e
        for e in await outbox.due(store, expires_ms, 100)
        if e["txId"] == tx_id and e["action"] != outbox.SYNC
    ]
    assert [(e["action"], e["dueAt"]) for e in owed] == [(outbox.EXPIRE, expires_ms)]
    early = await outbox.due(store, expires_ms - 1, 100)
    assert not [e for e in early if e["txId"] == tx_id and e["action"] == outbox.EXPIRE]

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
