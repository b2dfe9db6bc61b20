"""The approval hand-off for real (CONTRACT 5): the PayPal entry opens the simulator's approval
page in a popup (or, when popups are blocked, in the page itself); Approve comes back through the
node's return address, which owes the capture and sends the buyer on to the merchant's
success_url; the node's status reaches succeeded with exactly one capture."""

from __future__ import annotations

import re
from typing import Any

from browser.harness import ARTIFACTS, in_browser
from playwright.sync_api import expect
from support.paypal_shop import paypal_shop

from edge.sim.paypal import PayPalSimulator


async def _shop(admin: Any, paypal: PayPalSimulator, shop_site: Any) -> str:
    project_id = await admin.project(
        successUrl=f"{shop_site.url}/thanks",
        cancelUrl=f"{shop_site.url}/cart",
        allowedOrigins=[shop_site.url],
    )
    await admin.product(project_id)
    shop = await paypal_shop(admin, paypal, project_id=project_id)
    return shop.project_id


def _checkout_tx(page: Any) -> list[Any]:
    checkouts: list[Any] = []
    page.on(
        "request",
        lambda r: checkouts.append(r) if r.method == "POST" and "/api/checkout/" in r.url else None,
    )
    return checkouts


async def _settled(http: Any, project_id: str, tx_id: str) -> dict[str, Any]:
    answer = await http.get(f"/status/{project_id}/{tx_id}", params={"wait": 10, "version": 1})
    return dict(answer.json())


async def test_approval_in_a_popup_returns_through_the_node(admin, http, paypal, shop_site):
    project_id = await _shop(admin, paypal, shop_site)

    def buyer(page: Any) -> str:
        checkouts = _checkout_tx(page)
        page.goto(shop_site.page_url(project=project_id, product="book", mode="test"))
        page.get_by_role("button", name="Buy now").click()
        with page.context.expect_page() as opened:
            page.get_by_role("button", name=re.compile("PayPal")).click()
        popup = opened.value
        popup.wait_for_url(f"{paypal.url}/checkoutnow?token=*")
        ARTIFACTS.mkdir(exist_ok=True)
        expect(page.locator("cm-button")).to_contain_text(
            "Complete the payment in the PayPal window"
        )
        page.screenshot(path=ARTIFACTS / "paypal-window-waiting.png")
        popup.screenshot(path=ARTIFACTS / "paypal-approval-popup.png")
        popup.get_by_role("button", name="Approve").click()
        popup.wait_for_url(f"{shop_site.url}/thanks**")
        popup.screenshot(path=ARTIFACTS / "paypal-popup-thanks.png")
        [checkout] = checkouts
        return str(checkout.post_data_json["txId"])

    tx_id = await in_browser(buyer)
    status = await _settled(http, project_id, tx_id)
    assert (status["status"], status["provider"], status["isTest"]) == ("succeeded", "paypal", True)
    assert paypal.capture_count(paypal.order_of(tx_id)) == 1


async def test_a_blocked_popup_falls_back_to_navigating_the_page(admin, http, paypal, shop_site):
    project_id = await _shop(admin, paypal, shop_site)

    def buyer(page: Any) -> str:
        checkouts = _checkout_tx(page)
        page.add_init_script("window.open = () => null")  # what a popup blocker answers
        page.goto(shop_site.page_url(project=project_id, product="book", mode="test"))
        page.get_by_role("button", name="Buy now").click()
        page.get_by_role("button", name=re.compile("PayPal")).click()
        page.wait_for_url(f"{paypal.url}/checkoutnow?token=*")
        page.get_by_role("button", name="Approve").click()
        page.wait_for_url(f"{shop_site.url}/thanks**")
        page.screenshot(path=ARTIFACTS / "paypal-navigation-thanks.png")
        [checkout] = checkouts
        return str(checkout.post_data_json["txId"])

    tx_id = await in_browser(buyer)
    status = await _settled(http, project_id, tx_id)
    assert status["status"] == "succeeded"
