"""A payment link in a real Chromium (CONTRACT 4.1): a merchant with no website sells with the
link alone. The buyer opens ``/pay/{projectId}/{productId}``, the button's payment window lists
the methods, a card payment goes through the Stripe simulator, and the buyer lands on the node's
own page, which shows the payment received once the webhook has settled it. In the buyer's
language, at desktop and phone widths, with nothing axe-core finds. Screenshots:
test-artifacts/payment-link-*.png and axe-payment-link-*.png."""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest
from browser.axe import assert_accessible, require_axe
from browser.harness import ARTIFACTS, in_browser, require_browser
from playwright.sync_api import expect
from support.client import bearer, manual_shop
from support.paddle_shop import paddle_shop
from support.stripe_shop import StripeShop, stripe_shop

from edge.node import RunningNode
from edge.sim.stripe import StripeSimulator


@pytest.fixture(autouse=True)
def browser_and_axe() -> None:
    require_browser()
    require_axe()


async def _with_node_pages(node: RunningNode, admin, shop: StripeShop) -> None:
    """No website: the project's success and cancel addresses are the node's own pages."""
    pid = shop.project_id
    await admin.ok(
        "PATCH",
        f"/api/manage/projects/{pid}",
        {
            "successUrl": f"{node.url}/pay/{pid}/done/{{TX_ID}}",
            "cancelUrl": f"{node.url}/pay/{pid}/canceled/{{TX_ID}}",
        },
    )


def _shot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=ARTIFACTS / f"payment-link-{name}.png", full_page=True)


async def test_a_buyer_pays_by_card_through_the_link_alone(
    node: RunningNode, admin, http, sim: StripeSimulator
):
    shop = await stripe_shop(admin, sim)  # Stripe (test mode) and pay by mail
    await _with_node_pages(node, admin, shop)
    pid = shop.project_id
    link = f"{node.url}/pay/{pid}/book?mode=test&customerRef=user-42"

    def buyer(page: Any) -> str:
        checkouts: list[Any] = []
        page.on(
            "request",
            lambda r: (
                checkouts.append(r) if r.method == "POST" and "/api/checkout/" in r.url else None
            ),
        )
        page.goto(link)
        expect(page.get_by_role("heading", name="A book")).to_be_visible()
        expect(page.locator("main > .price")).to_have_text(
            "€19.99"
        )  # pay.js, in the page's language
        assert_accessible(page, "payment link")
        _shot(page, "page")

        page.get_by_role("button", name="Pay €19.99").click()
        window = page.get_by_role("dialog", name="A book")
        methods = window.locator("[part=provider-label]")
        expect(methods).to_have_text(["Card", "Pay by mail"])
        expect(window.locator("[part=price]")).to_contain_text("€19.99")
        assert_accessible(page, "payment link window")
        _shot(page, "window")

        window.get_by_role("button", name=re.compile("Card")).click()
        page.wait_for_url(f"{sim.url}/c/pay/**")
        _shot(page, "stripe")
        page.get_by_role("button", name=re.compile("^Pay")).click()
        page.wait_for_url(f"{node.url}/pay/{pid}/done/tx_*")
        # pending until the webhook lands, then the page follows the status by itself
        expect(page.get_by_role("heading", name="Payment received")).to_be_visible(timeout=15_000)
        expect(page.locator("dd data.money")).to_have_text("€19.99")
        assert_accessible(page, "payment link done")
        _shot(page, "done")
        [checkout] = checkouts
        body = checkout.post_data_json
        assert (body["productId"], body["mode"], body["metadata"]) == (
            "book",
            "test",
            {"customerRef": "user-42"},
        )
        assert page.url.endswith(body["txId"])
        return str(body["txId"])

    tx_id = await in_browser(buyer)
    status = (await http.get(f"/status/{pid}/{tx_id}")).json()
    assert (status["status"], status["provider"], status["isTest"]) == ("succeeded", "stripe", True)
    stored = await http.get(
        f"/api/projects/{pid}/transactions/{tx_id}", headers=bearer(shop.test_key)
    )
    assert stored.json()["customerRef"] == "user-42"


async def test_a_buyer_who_leaves_stripe_unpaid_lands_on_the_node_s_cancel_page(
    node: RunningNode, admin, sim: StripeSimulator
):
    shop = await stripe_shop(admin, sim)
    await _with_node_pages(node, admin, shop)
    pid = shop.project_id

    def buyer(page: Any) -> None:
        page.goto(f"{node.url}/pay/{pid}/book?mode=test")
        page.get_by_role("button", name="Pay €19.99").click()
        page.get_by_role("dialog", name="A book").get_by_role(
            "button", name=re.compile("Card")
        ).click()
        page.wait_for_url(f"{sim.url}/c/pay/**")
        # the simulator's way to leave unpaid: the session expires, the buyer goes to cancel_url
        page.get_by_role("button", name="Let it expire").click()
        page.wait_for_url(f"{node.url}/pay/{pid}/canceled/tx_*")
        # canceled while the expiry's webhook is on its way, expired once it has landed
        heading = re.compile("Payment canceled|Checkout expired")
        expect(page.get_by_role("heading", name=heading)).to_be_visible()
        expect(page.get_by_role("alert")).to_contain_text("You have not been charged.")
        assert_accessible(page, "payment link canceled")
        _shot(page, "canceled")

    await in_browser(buyer)


async def test_the_link_in_german_on_a_phone(node: RunningNode, admin):
    shop = await manual_shop(admin)
    link = f"{node.url}/pay/{shop.project_id}/book?quantity=2"

    def buyer(page: Any) -> dict[int, float]:
        widths = {}
        for width in (390, 320):  # a common phone, and the narrowest still in use
            page.set_viewport_size({"width": width, "height": 740})
            page.goto(link)
            assert page.evaluate("document.documentElement.lang") == "de"
            expect(page.locator("main > .price")).to_have_text("39,98\u00a0€")
            expect(page.locator(".lines")).to_contain_text("Menge")
            pay = page.get_by_role("button", name="39,98\u00a0€ bezahlen")
            expect(pay).to_be_visible()
            box = pay.bounding_box()
            assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width
            widths[width] = page.evaluate("document.documentElement.scrollWidth")
            assert_accessible(page, f"payment link phone {width}")
            _shot(page, f"phone-{width}")
            pay.click()
            window = page.get_by_role("dialog", name="A book")
            # the window follows the page's language too
            expect(window.locator("[part=provider]")).to_have_count(1)
            expect(window.locator("[part=price]")).to_have_text(re.compile(r"^\d+,\d\d\s€"))
            _shot(page, f"phone-{width}-window")
        return widths

    # nothing scrolls sideways
    assert await in_browser(buyer, locale="de-DE") == {390: 390, 320: 320}


async def test_the_quantity_of_a_link_is_what_the_window_shows_and_the_checkout_takes(
    node: RunningNode, admin
):
    shop = await manual_shop(admin)

    def buyer(page: Any) -> dict[str, Any]:
        checkouts: list[Any] = []
        page.on(
            "request",
            lambda r: (
                checkouts.append(r) if r.method == "POST" and "/api/checkout/" in r.url else None
            ),
        )
        page.goto(f"{node.url}/pay/{shop.project_id}/book?quantity=3")
        page.get_by_role("button", name="Pay €59.97").click()
        window = page.get_by_role("dialog", name="A book")
        expect(window.locator("[part=price]")).to_have_text("€59.97")
        expect(window.locator("[part=provider-amount]")).to_have_text("€59.97")
        window.get_by_role("button", name=re.compile("Pay by mail")).click()
        expect(window.locator(".amount-due")).to_have_text("€59.97")  # the checkout's answer
        _shot(page, "quantity-reference")
        [checkout] = checkouts
        return dict(checkout.post_data_json)

    assert (await in_browser(buyer))["quantity"] == 3


async def test_a_link_does_not_offer_what_needs_the_shop_s_own_card_form(
    node: RunningNode, admin, paddle
):
    # Paddle hands off to a card form (Paddle.js) the shop's own page opens; the link's page
    # opens none, so its window offers the rest (on a shop's page, Paddle stays offered)
    shop = await manual_shop(admin)
    await paddle_shop(admin, paddle, project_id=shop.project_id)
    offered = await http_offered(node, shop.project_id)
    assert {"paddle", "manual"} <= offered

    def buyer(page: Any) -> list[str]:
        page.goto(f"{node.url}/pay/{shop.project_id}/book?mode=test")
        page.get_by_role("button", name="Pay €19.99").click()
        window = page.get_by_role("dialog", name="A book")
        expect(window.get_by_role("button", name=re.compile("Pay by mail"))).to_be_visible()
        return [text.strip() for text in window.locator("[part=provider-label]").all_inner_texts()]

    assert await in_browser(buyer) == ["Pay by mail"]


async def http_offered(node: RunningNode, project_id: str) -> set[str]:
    """The providers the project's test-mode public info lists."""
    async with httpx.AsyncClient(base_url=node.url) as http:
        info = await http.get(f"/api/projects/{project_id}/public-info", params={"mode": "test"})
    return {entry["provider"] for entry in info.json()["providers"]}
