"""A project wired to a running Stripe simulator, as `edge serve --demo` wires one."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

from edge.sim.stripe import StripeSimulator
from edge.sim.stripe.registration import credentials
from support.client import Admin, shop_or_new, simulated

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
    """Stripe enabled (test mode, against ``sim``) on a new shop, or on ``project_id``, with a
    "pro-monthly" subscription (9 EUR a month)."""
    shop = await shop_or_new(admin, project_id)
    pid = shop.project_id
    await admin.product(
        pid, "pro-monthly", name="Pro", kind="subscription", amount=9, interval="month"
    )
    test = await simulated(admin, "stripe", pid, partial(credentials, sim, secret_key=SECRET_KEY))
    return StripeShop(pid, shop.live_key, shop.test_key, sim, test["webhookSecret"])
