"""Convergence of BTCPay stories through the real node (CONTRACT 2), what only BTCPay's
stories show: an invoice story that says both that it was paid and that it ended unpaid
(``CONTRADICTED``, tests/support/stories/btcpay.py) needs attention in every order, with
retries and redeliveries (new ``deliveryId``, the first one's ``originalDeliveryId``) stored
once.

Every other BTCPay story in every order of its deliveries is played by tests/contract
(test_convergence_contract.py)."""

from __future__ import annotations

import itertools
import random
from typing import Any

import httpx
import pytest
from support.btcpay_shop import BTCPayShop, btcpay_shop
from support.client import bearer, post_checkout
from support.orders import delivery_orders
from support.stories.btcpay import CONTRADICTED, Deliveries

from edge.sim.btcpay import deliveries


async def open_checkout(http: httpx.AsyncClient, shop: BTCPayShop) -> tuple[str, str]:
    answer = await post_checkout(http, "btcpay", shop, "ten")
    assert answer.status_code == 201, answer.text
    tx = answer.json()["txId"]
    return tx, shop.sim.invoice_of(tx)


async def deliver(
    http: httpx.AsyncClient, shop: BTCPayShop, tx: str, story: Deliveries, order: list[int]
) -> list[tuple[int, str]]:
    """Deliver in this order; (version, status) after each."""
    seen = []
    for index in order:
        body = story.body(index)
        answer = await http.post(
            f"/webhook/btcpay/{shop.project_id}",
            content=body,
            headers=deliveries.signed(body, shop.webhook_secret),
        )
        assert answer.status_code == 200, answer.text
        status = (
            await http.get(f"/status/{shop.project_id}/{tx}", headers=bearer(shop.test_key))
        ).json()
        seen.append((status["version"], status["status"]))
    return seen


async def record(http: httpx.AsyncClient, shop: BTCPayShop, tx: str) -> dict[str, Any]:
    answer = await http.get(
        f"/api/projects/{shop.project_id}/transactions/{tx}", headers=bearer(shop.test_key)
    )
    return dict(answer.json())


# CONTRACT 2 says the final status does not depend on delivery order, and that a success is
# never taken back nor a terminal status left. For a story holding both, no node can keep all
# three: delivered success-first it stays succeeded, delivered ending-first it stays ended. What
# every order gives is the flag, so the merchant looks (docs/api.md, "What a payment must pay").
@pytest.mark.parametrize("name", CONTRADICTED)
async def test_a_contradicted_story_needs_attention_in_every_order(admin, http, btcpay, name):
    story, (status, version, _), (other, other_version) = CONTRADICTED[name]
    shop = await btcpay_shop(admin, btcpay, webhook_url="http://127.0.0.1:9/nobody")
    rng = random.Random(name)
    for order in [[*range(len(story))], *delivery_orders(len(story), rng, samples=10)]:
        tx, invoice = await open_checkout(http, shop)
        seen = await deliver(http, shop, tx, Deliveries(shop, tx, invoice, story), order)
        assert seen[-1] in ((version, status), (other_version, other)), (order, seen)
        assert all(a[0] <= b[0] for a, b in itertools.pairwise(seen)), (order, seen)
        stored = await record(http, shop, tx)
        assert stored["needsAttention"] is True, (order, stored)
        codes = {flag["code"] for flag in stored["attention"]}
        assert codes & {"contradicted", "paid_late"}, (order, stored["attention"])
        from_btcpay = [e for e in stored["events"] if e["provider"] == "btcpay"]
        story_events = [e for e in from_btcpay if (e["providerEventId"] or "").endswith(tx[-12:])]
        assert len(story_events) == len(story), (order, from_btcpay)
