"""The approval hand-off for real (CONTRACT 5, 4.3): the PayPal entry opens the simulator's
approval page in a popup (or, when popups are blocked, in the page itself). Whatever the buyer
does there, they end up in the main window: Approve comes back through the node's return
address, which owes the capture, waits for PayPal's answer and sends the main window on to the
merchant's success address (its {TX_ID} filled in) while the popup closes itself; Cancel and a
declined funding source land on a page that says what happened, never a "thank you"; a popup
the buyer closes themselves offers the payment options again."""

from __future__ import annotations

import re
from typing import Any

from browser.harness import ARTIFACTS, in_browser, wait_until
from playwright.sync_api import expect
from support.paypal_shop import paypal_shop

from edge.sim.paypal import PayPalSimulator


async def _shop(admin: Any, paypal: PayPalSimulator, shop_site: Any) -> str:
    project_id = await admin.project(
        successUrl=f"{shop_site.url}/thanks?tx={{TX_ID}}",
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


def _to_paypal(page: Any, shop_site: Any, project_id: str, paypal: PayPalSimulator) -> Any:
    """The buyer clicks Buy, then PayPal; the popup with PayPal's approval page."""
    page.goto(shop_site.page_url(project=project_id, product="book", mode="test"))
    page.get_by_role("button", name="Buy now").click()
    with page.context.expect_page() as opened:
        page.get_by_role("button", name=re.compile("PayPal")).click()
    popup = opened.value
    popup.wait_for_url(f"{paypal.url}/checkoutnow?token=*")
    expect(page.locator("cm-button")).to_contain_text(
        "PayPal: complete the payment in the window that opened"
    )
    return popup


def _press_and_close(popup: Any, button: str) -> None:
    """Press ``button`` on PayPal's page; the node's return page closes the popup."""
    with popup.expect_event("close", timeout=15_000):
        popup.get_by_role("button", name=button).click()


async def test_approval_in_a_popup_sends_the_main_window_to_the_success_page(
    admin, http, paypal, shop_site
):
    project_id = await _shop(admin, paypal, shop_site)

    def buyer(page: Any) -> str:
        checkouts = _checkout_tx(page)
        popup = _to_paypal(page, shop_site, project_id, paypal)
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=ARTIFACTS / "paypal-window-waiting.png")
        popup.screenshot(path=ARTIFACTS / "paypal-approval-popup.png")
        [checkout] = checkouts
        tx_id = str(checkout.post_data_json["txId"])
        _press_and_close(popup, "Approve")
        page.wait_for_url(f"{shop_site.url}/thanks?tx={tx_id}")
        page.screenshot(path=ARTIFACTS / "paypal-main-window-thanks.png")
        assert popup.is_closed() and len(page.context.pages) == 1
        return tx_id

    tx_id = await in_browser(buyer)
    status = await _settled(http, project_id, tx_id)
    assert (status["status"], status["provider"], status["isTest"]) == ("succeeded", "paypal", True)
    assert paypal.capture_count(paypal.order_of(tx_id)) == 1


async def test_cancel_in_the_popup_says_canceled_in_the_main_window(admin, http, paypal, shop_site):
    project_id = await _shop(admin, paypal, shop_site)

    def buyer(page: Any) -> str:
        checkouts = _checkout_tx(page)
        popup = _to_paypal(page, shop_site, project_id, paypal)
        _press_and_close(popup, "Cancel")
        page.wait_for_url("**/cancel?shown=1&lang=en")
        expect(page.get_by_role("heading")).to_have_text("Payment canceled")
        expect(page.get_by_role("alert")).to_contain_text("You have not been charged")
        page.screenshot(path=ARTIFACTS / "paypal-main-window-canceled.png")
        page.get_by_role("link", name="Back to the shop").click()
        page.wait_for_url(f"{shop_site.url}/cart")
        [checkout] = checkouts
        return str(checkout.post_data_json["txId"])

    tx_id = await in_browser(buyer)
    assert (await _settled(http, project_id, tx_id))["status"] == "canceled"
    assert paypal.capture_count(paypal.order_of(tx_id)) == 0


async def test_a_declined_payment_says_declined_in_the_main_window_not_thank_you(
    admin, http, paypal, shop_site
):
    project_id = await _shop(admin, paypal, shop_site)

    def buyer(page: Any) -> str:
        checkouts = _checkout_tx(page)
        popup = _to_paypal(page, shop_site, project_id, paypal)
        _press_and_close(popup, "Decline")
        page.wait_for_url("**?shown=1&lang=en")
        expect(page.get_by_role("heading")).to_have_text("Payment declined")
        expect(page.get_by_role("alert")).to_contain_text("PayPal declined the payment")
        assert "Thank you" not in page.content()
        page.screenshot(path=ARTIFACTS / "paypal-main-window-declined.png")
        [checkout] = checkouts
        return str(checkout.post_data_json["txId"])

    tx_id = await in_browser(buyer)
    assert (await _settled(http, project_id, tx_id))["status"] == "pending"
    assert paypal.capture_count(paypal.order_of(tx_id)) == 0


async def test_a_popup_the_buyer_closes_offers_the_payment_options_again(admin, paypal, shop_site):
    project_id = await _shop(admin, paypal, shop_site)

    def buyer(page: Any) -> None:
        popup = _to_paypal(page, shop_site, project_id, paypal)
        popup.close()
        button = page.locator("cm-button")
        expect(button).to_contain_text("PayPal: the window was closed before the payment")
        page.screenshot(path=ARTIFACTS / "paypal-popup-closed-by-buyer.png")
        page.get_by_role("button", name="Choose again").click()
        expect(page.get_by_role("button", name=re.compile("PayPal"))).to_be_visible()
        wait_until(page, "document.querySelectorAll('cm-button').length === 1")

    await in_browser(buyer)


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
        [checkout] = checkouts
        tx_id = str(checkout.post_data_json["txId"])
        page.wait_for_url(f"{shop_site.url}/thanks?tx={tx_id}")
        page.screenshot(path=ARTIFACTS / "paypal-navigation-thanks.png")
        return tx_id

    tx_id = await in_browser(buyer)
    status = await _settled(http, project_id, tx_id)
    assert status["status"] == "succeeded"
