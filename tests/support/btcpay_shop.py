"""A project wired to a running BTCPay Server simulator, as ``edge serve --demo`` wires one."""

from __future__ import annotations

from dataclasses import dataclass

from edge.sim.btcpay import BTCPaySimulator
from support.client import Admin, shop_or_new

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
    pid, live_key, test_key = shop.project_id, shop.live_key, shop.test_key
    await admin.product(pid, "ten", name="Ten", amount=10, currency="EUR")
    store_id = sim.register_store(API_KEY)
    url = (webhook_url or f"{admin.url}/webhook/btcpay/{{project}}").format(project=pid)
    webhook_id, secret = sim.register_webhook(store_id, url)
    test = {"serverUrl": sim.url, "apiKey": API_KEY, "storeId": store_id, "webhookSecret": secret}
    await admin.provider(pid, "btcpay", {"enabled": True, "order": 1, "test": test})
    return BTCPayShop(pid, live_key, test_key, sim, store_id, webhook_id, secret)
