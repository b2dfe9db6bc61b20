"""A project wired to a running PayPal simulator, as ``edge serve --demo`` wires one."""

from __future__ import annotations

from dataclasses import dataclass

from edge.sim.paypal import PayPalSimulator
from support.client import Admin, shop_or_new

CLIENT_ID = "sim-client-shop"
CLIENT_SECRET = "sim-secret-shop"


@dataclass
class PayPalShop:
    project_id: str
    live_key: str
    test_key: str
    sim: PayPalSimulator
    webhook_id: str


async def paypal_shop(
    admin: Admin, sim: PayPalSimulator, project_id: str | None = None, **credentials: object
) -> PayPalShop:
    """PayPal enabled (test mode, against ``sim``) on a new shop, or on ``project_id``."""
    shop = await shop_or_new(admin, project_id)
    pid, live_key, test_key = shop.project_id, shop.live_key, shop.test_key
    await admin.product(
        pid, "pro-monthly", name="Pro", kind="subscription", amount=9, interval="month"
    )
    webhook_id = sim.register_webhook(CLIENT_ID, CLIENT_SECRET, f"{admin.url}/webhook/paypal/{pid}")
    test = {
        "clientId": CLIENT_ID,
        "clientSecret": CLIENT_SECRET,
        "webhookId": webhook_id,
        "apiBase": sim.url,
        "certHosts": ["127.0.0.1"],
        **credentials,
    }
    await admin.provider(pid, "paypal", {"enabled": True, "order": 1, "test": test})
    return PayPalShop(pid, live_key, test_key, sim, webhook_id)
