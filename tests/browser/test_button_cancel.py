"""What preventDefault() does to each <cm-button> event (CONTRACT 5), and the double-click lock."""

from __future__ import annotations

import re

from browser.harness import in_browser, wait_until
from playwright.sync_api import expect
from support.client import bearer, manual_shop

CLICK_TWICE = """() => {
  const inner = document.querySelector('cm-button').shadowRoot.querySelector('[part=button]');
  inner.click();
  inner.click();
}"""


def types(events):
    return [e["type"] for e in events]


async def test_a_second_click_while_busy_does_nothing(admin, shop_site):
    shop = await manual_shop(admin)

    def buyer(page):
        page.goto(shop_site.page_url(project=shop.project_id, product="book"))
        page.evaluate(CLICK_TWICE)
        expect(page.get_by_role("button", name=re.compile("Pay by mail"))).to_be_visible()
        page.evaluate(CLICK_TWICE)  # still busy: the list is open
        return page.evaluate("cmEvents")

    events = await in_browser(buyer)
    assert types(events) == ["cm-busy", "cm-load-providers"]


async def test_prevented_busy_hides_the_spinner_and_the_lock_holds(admin, shop_site):
    shop = await manual_shop(admin)

    def buyer(page):
        page.goto(shop_site.page_url(project=shop.project_id, product="book", prevent="cm-busy"))
        page.evaluate(CLICK_TWICE)
        expect(page.get_by_role("button", name=re.compile("Pay by mail"))).to_be_visible()
        spinner_hidden = page.locator("cm-button").locator("[part=spinner]").is_hidden()
        busy = page.locator("cm-button").locator("[part=button]").get_attribute("aria-busy")
        return page.evaluate("cmEvents"), spinner_hidden, busy

    events, spinner_hidden, busy = await in_browser(buyer)
    assert types(events) == ["cm-busy", "cm-load-providers"]
    assert spinner_hidden and busy == "true"


async def test_prevented_load_providers_closes_the_window_without_fetching(admin, shop_site):
    shop = await manual_shop(admin)

    def buyer(page):
        fetched = []
        page.on(
            "request",
            lambda request: fetched.append(request.url) if "public-info" in request.url else None,
        )
        page.goto(
            shop_site.page_url(project=shop.project_id, product="book", prevent="cm-load-providers")
        )
        page.get_by_role("button", name="Buy now").click()
        expect(page.get_by_role("dialog")).to_have_count(0)
        wait_until(page, "cmEvents.length === 3")
        return page.evaluate("cmEvents"), fetched

    events, fetched = await in_browser(buyer)
    assert types(events) == ["cm-busy", "cm-load-providers", "cm-idle"]
    assert fetched == []


async def test_prevented_checkout_started_creates_nothing_and_shows_the_list_again(
    admin, http, shop_site
):
    shop = await manual_shop(admin)

    def buyer(page):
        page.goto(
            shop_site.page_url(
                project=shop.project_id, product="book", prevent="cm-checkout-started"
            )
        )
        page.get_by_role("button", name="Buy now").click()
        choice = page.get_by_role("button", name=re.compile("Pay by mail"))
        choice.click()
        expect(choice).to_be_visible()
        wait_until(page, "cmEvents.length === 4")
        choice.click()  # a second pick is a new busy run
        wait_until(page, "cmEvents.length === 7")
        return page.evaluate("cmEvents")

    events = await in_browser(buyer)
    assert types(events) == [
        "cm-busy",
        "cm-load-providers",
        "cm-checkout-started",
        "cm-idle",
        "cm-busy",
        "cm-checkout-started",
        "cm-idle",
    ]
    listed = await http.get(
        f"/api/projects/{shop.project_id}/transactions", headers=bearer(shop.live_key)
    )
    assert listed.json()["items"] == []


async def test_prevented_error_shows_no_message_and_closes_the_window(admin, shop_site):
    project_id = await admin.project()
    await admin.product(project_id)

    def buyer(page):
        page.goto(shop_site.page_url(project=project_id, product="book", prevent="cm-error"))
        page.get_by_role("button", name="Buy now").click()
        wait_until(page, "cmEvents.length === 4")
        expect(page.get_by_role("dialog")).to_have_count(0)
        return page.evaluate("cmEvents"), page.get_by_role("alert").count()

    events, alerts = await in_browser(buyer)
    assert types(events) == ["cm-busy", "cm-load-providers", "cm-error", "cm-idle"]
    assert events[2]["detail"] == {"code": "no_provider", "isError": True}
    assert alerts == 0


async def test_prevented_idle_changes_nothing(admin, shop_site):
    shop = await manual_shop(admin)

    def buyer(page):
        page.goto(shop_site.page_url(project=shop.project_id, product="book", prevent="cm-idle"))
        page.get_by_role("button", name="Buy now").click()
        page.get_by_role("button", name=re.compile("Pay by mail")).click()
        expect(page.locator("cm-button").locator("[part=code]")).to_be_visible()
        return page.evaluate("cmEvents")

    events = await in_browser(buyer)
    assert types(events) == ["cm-busy", "cm-load-providers", "cm-checkout-started", "cm-idle"]
