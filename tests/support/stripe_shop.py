"""A project wired to a running Stripe simulator, as `edge serve --demo` wires one."""

from __future__ import annotations

from dataclasses import dataclass

from edge.sim.stripe import StripeSimulator
from support.client import Admin, shop_or_new

SECRET_KEY = "sk_test_shop0123456789abcdefghij"


@dataclass
class StripeShop:
    project_id: str
    live_key: str
    test_key: str
    sim: StripeSimulator
    webhook_secret: str


async def stripe_shop(
    admin: Admin, sim: StripeSimulator, project_id: str | None = None
) -> StripeShop:
    """Stripe enabled (test mode, against ``sim``) on a new shop, or on ``project_id``."""
    shop = await shop_or_new(admin, project_id)
    pid = shop.project_id
    await admin.product(
        pid, "pro-monthly", name="Pro", kind="subscription", amount=9, interval="month"
    )
    secret = sim.register_endpoint(SECRET_KEY, f"{admin.url}/webhook/stripe/{pid}")
    credentials = {
        "secretKey": SECRET_KEY,
        "publishableKey": "pk_test_shop0123456789abcdefghij",
        "webhookSecret": secret,
        "apiBase": sim.url,
    }
    await admin.provider(pid, "stripe", {"enabled": True, "order": 1, "test": credentials})
    return StripeShop(pid, shop.live_key, shop.test_key, sim, secret)
