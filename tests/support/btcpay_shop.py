"""A project wired to a running BTCPay Server simulator, as ``edge serve --demo`` wires one."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from edge.sim.btcpay import BTCPaySimulator
from edge.sim.btcpay.registration import wire
from support.client import Admin, shop_or_new, simulated

API_KEY = "sim-btcpay-key-shop"


@dataclass
class BTCPayShop:
    project_id: str
    live_key: str
    test_key: str
    sim: BTCPaySimulator
    store_id: str
    webhook_id: str
    webhook_secret: str


async def btcpay_shop(
    admin: Admin,
    sim: BTCPaySimulator,
    webhook_url: str | None = None,
    project_id: str | None = None,
) -> BTCPayShop:
    """BTCPay enabled (test mode, against ``sim``) on a new shop, or on ``project_id``, with a
    "ten" product (10 EUR); the store's webhook goes to the node's, or to ``webhook_url``
    (``{project}`` filled in)."""
    shop = await shop_or_new(admin, project_id)
    pid = shop.project_id
    await admin.product(pid, "ten", name="Ten", amount=10, currency="EUR")
    webhook_ids: list[str] = []

    def wired(node_url: str) -> dict[str, Any]:
        made, webhook_id = wire(sim, (webhook_url or node_url).format(project=pid), API_KEY)
        webhook_ids.append(webhook_id)
        return made

    test = await simulated(admin, "btcpay", pid, wired)
    return BTCPayShop(
        pid,
        shop.live_key,
        shop.test_key,
        sim,
        test["storeId"],
        webhook_ids[0],
        test["webhookSecret"],
    )
