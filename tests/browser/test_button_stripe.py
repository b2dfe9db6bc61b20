"""The redirect hand-off for real: the card entry leads to the Stripe simulator's hosted page,
Pay leads back to the merchant's success_url, and the node's status reaches succeeded."""

from __future__ import annotations

import re

import trio
from browser.harness import in_browser

from edge.sim.stripe.server import StripeSimulator

SECRET_KEY = "sk_test_button"


async def test_card_checkout_through_the_stripe_simulator(admin, http, node, shop_site):
    async with trio.open_nursery() as nursery:
        sim = StripeSimulator()
        sim_url = await nursery.start(sim.run)
        project_id = await admin.project(
            successUrl=f"{shop_site.url}/thanks",
            cancelUrl=f"{shop_site.url}/cart",
            allowedOrigins=[shop_site.url],
        )
        await admin.product(project_id)
        webhook_secret = sim.register_endpoint(
            SECRET_KEY, f"{node.url}/webhook/stripe/{project_id}"
        )
        credentials = {
            "secretKey": SECRET_KEY,
            "publishableKey": "pk_test_button",
            "webhookSecret": webhook_secret,
            "apiBase": sim_url,
        }
        await admin.provider(project_id, "stripe", {"enabled": True, "test": credentials})

        def buyer(page):
            checkouts = []
            page.on(
                "request",
                lambda r: (
                    checkouts.append(r)
                    if r.method == "POST" and "/api/checkout/" in r.url
                    else None
                ),
            )
            page.goto(shop_site.page_url(project=project_id, product="book", mode="test"))
            page.get_by_role("button", name="Buy now").click()
            page.get_by_role("button", name=re.compile("Card")).click()
            page.wait_for_url(f"{sim_url}/c/pay/**")
            page.get_by_role("button", name=re.compile("^Pay")).click()
            page.wait_for_url(f"{shop_site.url}/thanks**")
            [checkout] = checkouts
            return checkout.post_data_json["txId"]

        tx_id = await in_browser(buyer)
        sim.stop()

    # The id the button made is the one the webhook settled.
    status = (
        await http.get(f"/status/{project_id}/{tx_id}", params={"wait": 10, "version": 1})
    ).json()
    assert (status["status"], status["provider"], status["isTest"]) == ("succeeded", "stripe", True)
