"""A project wired to a running Paddle simulator, as ``edge serve --demo`` wires one."""

from __future__ import annotations

from dataclasses import dataclass

from edge.sim.paddle import PaddleSimulator
from support.client import Admin, shop_or_new

API_KEY = "pdl_sdbx_apikey_shop0123456789"
CLIENT_TOKEN = "test_shop0123456789abcdefghij"


@dataclass
class PaddleShop:
    project_id: str
    live_key: str
    test_key: str
    sim: PaddleSimulator
    webhook_secret: str


async def paddle_shop(
    admin: Admin, sim: PaddleSimulator, project_id: str | None = None
) -> PaddleShop:
    """Paddle enabled (test mode, against ``sim``) on a new shop, or on ``project_id``, with a
    "ten" product (10 EUR) and a "pro-monthly" subscription (9 EUR a month); the account's
    client-side token is ``CLIENT_TOKEN``."""
    shop = await shop_or_new(admin, project_id)
    pid, live_key, test_key = shop.project_id, shop.live_key, shop.test_key
    await admin.product(pid, "ten", name="Ten", amount=10, currency="EUR")
    await admin.product(
        pid, "pro-monthly", name="Pro", kind="subscription", amount=9, interval="month"
    )
    secret = sim.register_destination(API_KEY, f"{admin.url}/webhook/paddle/{pid}")
    sim.register_client_token(API_KEY, CLIENT_TOKEN)  # what the shop's pages hand to Paddle.js
    test = {
        "apiKey": API_KEY,
        "clientToken": CLIENT_TOKEN,
        "webhookSecret": secret,
        "apiBase": sim.url,
    }
    await admin.provider(pid, "paddle", {"enabled": True, "order": 1, "test": test})
    return PaddleShop(pid, live_key, test_key, sim, secret)
