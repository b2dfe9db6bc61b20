"""A project wired to a running Paddle simulator, as ``edge serve --demo`` wires one."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

from edge.sim.paddle import PaddleSimulator
from edge.sim.paddle.registration import credentials
from support.client import Admin, shop_or_new, simulated

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
    pid = shop.project_id
    await admin.product(pid, "ten", name="Ten", amount=10, currency="EUR")
    await admin.product(
        pid, "pro-monthly", name="Pro", kind="subscription", amount=9, interval="month"
    )
    sim.register_client_token(API_KEY, CLIENT_TOKEN)  # what the shop's pages hand to Paddle.js
    wire = partial(credentials, sim, api_key=API_KEY, client_token=CLIENT_TOKEN)
    test = await simulated(admin, "paddle", pid, wire)
    return PaddleShop(pid, shop.live_key, shop.test_key, sim, test["webhookSecret"])
