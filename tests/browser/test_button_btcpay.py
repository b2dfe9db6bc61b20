"""The crypto hand-off for real (CONTRACT 5): the crypto entry leads to the BTCPay simulator's
invoice page; Pay in full, then Confirm (the blockchain's confirmations), and the invoice sends
the buyer back to the merchant's success_url; the node's status reaches succeeded from BTCPay's
webhooks."""

from __future__ import annotations

import re
from typing import Any

from browser.harness import ARTIFACTS, in_browser
from support.btcpay_shop import btcpay_shop


async def test_crypto_checkout_through_the_btcpay_simulator(admin, http, btcpay, shop_site):
    project_id = await admin.project(
        successUrl=f"{shop_site.url}/thanks",
        cancelUrl=f"{shop_site.url}/cart",
        allowedOrigins=[shop_site.url],
    )
    await admin.product(project_id)
    await btcpay_shop(admin, btcpay, project_id=project_id)

    def buyer(page: Any) -> str:
        checkouts: list[Any] = []
        page.on(
            "request",
            lambda r: (
                checkouts.append(r) if r.method == "POST" and "/api/checkout/" in r.url else None
            ),
        )
        page.goto(shop_site.page_url(project=project_id, product="book", mode="test"))
        page.get_by_role("button", name="Buy now").click()
        page.get_by_role("button", name=re.compile("Crypto")).click()
        page.wait_for_url(f"{btcpay.url}/i/**")
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=ARTIFACTS / "btcpay-invoice.png")
        page.get_by_role("button", name="Pay in full").click()
        page.get_by_role("button", name="Confirm").wait_for()
        page.screenshot(path=ARTIFACTS / "btcpay-invoice-paid.png")
        page.get_by_role("button", name="Confirm").click()
        page.wait_for_url(f"{shop_site.url}/thanks**")
        page.screenshot(path=ARTIFACTS / "btcpay-thanks.png")
        [checkout] = checkouts
        return str(checkout.post_data_json["txId"])

    tx_id = await in_browser(buyer)
    status = (
        await http.get(f"/status/{project_id}/{tx_id}", params={"wait": 10, "version": 2})
    ).json()
    assert (status["status"], status["provider"], status["isTest"]) == ("succeeded", "btcpay", True)
