"""A project wired to a running PayPal simulator, as ``edge serve --demo`` wires one."""

from __future__ import annotations

from dataclasses import dataclass

from edge.sim.paypal import PayPalSimulator
from edge.sim.paypal.registration import credentials as wire
from support.client import Admin, shop_or_new, simulated

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
    """PayPal enabled (test mode, against ``sim``) on a new shop, or on ``project_id``, with a
    "pro-monthly" subscription (9 EUR a month); ``credentials`` replace the wired ones."""
    shop = await shop_or_new(admin, project_id)
    pid = shop.project_id
    await admin.product(
        pid, "pro-monthly", name="Pro", kind="subscription", amount=9, interval="month"
    )
    test = await simulated(
        admin,
        "paypal",
        pid,
        lambda url: {**wire(sim, url, (CLIENT_ID, CLIENT_SECRET)), **credentials},
    )
    return PayPalShop(pid, shop.live_key, shop.test_key, sim, test["webhookId"])
