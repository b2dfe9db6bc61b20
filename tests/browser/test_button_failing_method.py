"""A method whose provider fails on its side is not offered to the buyer (issue 37, part 4):
with Stripe's simulator answering 500, three checkouts fail, the signed public info lists Stripe
``"available": false``, and the payment window offers pay by mail alone."""

from __future__ import annotations

import re

import trio
from browser.harness import in_browser
from playwright.sync_api import expect
from support.client import manual_shop, post_checkout

from edge.domain.provider_health import FAILING_AFTER
from edge.sim.stripe.server import StripeSimulator

SECRET_KEY = "sk_test_failing"


async def test_the_window_offers_only_the_methods_whose_providers_answer(
    admin, http, node, shop_site
):
    async with trio.open_nursery() as nursery:
        sim = StripeSimulator()
        sim_url = await nursery.start(sim.run)
        shop = await manual_shop(admin)
        secret = sim.register_endpoint(SECRET_KEY, f"{node.url}/webhook/stripe/{shop.project_id}")
        credentials = {
            "secretKey": SECRET_KEY,
            "publishableKey": "pk_test_failing",
            "webhookSecret": secret,
            "apiBase": sim_url,
        }
        await admin.provider(shop.project_id, "stripe", {"enabled": True, "test": credentials})
        url = shop_site.page_url(project=shop.project_id, product="book", mode="test")

        def methods(page) -> list[str]:
            page.goto(url)
            page.get_by_role("button", name="Buy now").click()
            dialog = page.get_by_role("dialog")
            expect(dialog.get_by_role("button", name=re.compile("Pay by mail"))).to_be_visible()
            return [
                name.strip() for name in dialog.locator("[part=provider-label]").all_inner_texts()
            ]

        offered = await in_browser(methods)
        assert any("Card" in name for name in offered), offered  # both, while Stripe answers
        sim.fail_next_requests = 10_000  # Stripe down: every call answered 500
        for _ in range(FAILING_AFTER):
            failed = await post_checkout(http, "stripe", shop, "book")
            assert failed.status_code == 502, failed.text
        offered = await in_browser(methods)
        assert offered == ["Pay by mail"], offered
        nursery.cancel_scope.cancel()
