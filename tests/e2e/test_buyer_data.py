"""The node stores nothing about the buyer (CONTRACT 6): a provider's body that names the buyer
is verified and stored as an event, and no byte of the buyer's details reaches the store."""

from __future__ import annotations

import copy

import trio
from support.client import bearer, post_checkout
from support.postgres import stored_bytes
from support.stripe_shop import stripe_shop

from edge.node import RunningNode, store_path

EMAIL = "buyer.private@example.org"
NAME = "Ada Privateperson"


async def test_a_session_naming_the_buyer_leaves_no_trace_in_the_store(node, admin, http, sim):
    shop = await stripe_shop(admin, sim)
    response = await post_checkout(http, "stripe", shop, "book")
    checkout = response.json()
    await sim.complete(checkout["url"].rsplit("/", 1)[-1])
    event, _ = next((e, s) for e, s in sim.delivered if e["type"] == "checkout.session.completed")
    named = copy.deepcopy(event)
    named["id"] = event["id"] + "x"
    named["data"]["object"]["customer_details"] = {
        "email": EMAIL,
        "name": NAME,
        "phone": "+44 20 7946 0000",
        "address": {"line1": "1 Hidden Lane", "city": "Nowhere", "country": "GB"},
    }
    assert await sim.send("sk_test_shop0123456789abcdefghij", named) == [200]
    tx = (
        await http.get(
            f"/api/projects/{shop.project_id}/transactions/{checkout['txId']}",
            headers=bearer(shop.test_key),
        )
    ).json()
    assert [e["providerEventId"] for e in tx["events"]].count(named["id"]) == 1
    stored = await _stored(node)
    for secret in (EMAIL, NAME, "Hidden Lane"):
        assert secret.encode() not in stored


async def _stored(node: RunningNode) -> bytes:
    """Everything the node's store holds: LMDB's files, or PostgreSQL's tables."""
    url = node.ctx.settings.store_url
    if url is not None:
        return await trio.to_thread.run_sync(stored_bytes, url)
    return b"".join(path.read_bytes() for path in store_path(node.ctx.settings).iterdir())
