"""The hand-offs other than pay-by-mail. The node's answer to the checkout is replaced in the
browser (the element dispatches on its ``type``), so these run without provider accounts."""

from __future__ import annotations

import json
import re

from browser.harness import in_browser, wait_until
from playwright.sync_api import expect
from support.client import manual_shop


def answer_checkout(page, answer: dict) -> None:
    body = {
        "txId": "tx_01JD0000000000000000000000",
        "provider": "manual",
        "kind": "manual",
        "amount": 19.99,
        "currency": "EUR",
        "isTest": False,
        **answer,
    }
    page.route(
        "**/api/checkout/**",
        lambda route: route.fulfill(
            status=201,
            body=json.dumps(body),
            content_type="application/json",
            headers={"Access-Control-Allow-Origin": "*"},
        ),
    )


def pick(page, url: str) -> None:
    page.goto(url)
    page.get_by_role("button", name="Buy now").click()
    page.get_by_role("button", name=re.compile("Pay by mail")).click()


async def test_redirect_navigates_the_page(admin, shop_site):
    shop = await manual_shop(admin)
    target = shop_site.page_url("/hosted-checkout")

    def buyer(page):
        answer_checkout(page, {"type": "redirect", "url": target})
        pick(page, shop_site.page_url(project=shop.project_id, product="book"))
        page.wait_for_url(target)
        return page.url

    assert await in_browser(buyer) == target


async def test_approval_opens_a_popup(admin, shop_site):
    shop = await manual_shop(admin)
    target = shop_site.page_url("/approve")

    def buyer(page):
        answer_checkout(page, {"type": "approval", "url": target})
        with page.context.expect_page() as popup_info:
            pick(page, shop_site.page_url(project=shop.project_id, product="book"))
        popup = popup_info.value
        popup.wait_for_load_state()
        expect(page.get_by_role("dialog")).to_contain_text(
            "Pay by mail: complete the payment in the window that opened"
        )
        wait_until(page, "cmEvents.length === 4")
        return popup.url, page.url, page.evaluate("cmEvents.at(-1).type")

    popup_url, page_url, last = await in_browser(buyer)
    assert popup_url == target and "/approve" not in page_url and last == "cm-idle"


async def test_token_goes_to_the_pages_card_form(admin, shop_site):
    shop = await manual_shop(admin)

    def buyer(page):
        answer_checkout(
            page,
            {"type": "token", "provider": "paddle", "token": "txn_01", "publishableKey": "test_ck"},
        )
        page.goto(shop_site.page_url(project=shop.project_id, product="book"))
        page.evaluate("""() => {
          window.cardForms = [];
          document.querySelector('cm-button').cardForm = (handoff) => cardForms.push(handoff);
        }""")
        page.get_by_role("button", name="Buy now").click()
        page.get_by_role("button", name=re.compile("Pay by mail")).click()
        wait_until(page, "cardForms.length === 1 && cmEvents.length === 4")
        expect(page.get_by_role("dialog")).to_have_count(0)
        return page.evaluate("cardForms[0]"), page.evaluate("cmEvents.at(-1).type")

    handoff, last = await in_browser(buyer)
    assert handoff == {
        "provider": "paddle",
        "txId": "tx_01JD0000000000000000000000",
        "token": "txn_01",
        "publishableKey": "test_ck",
        "mode": "live",
        "amount": 19.99,
        "currency": "EUR",
    }
    assert last == "cm-idle"


async def test_token_without_a_card_form_is_an_error(admin, shop_site):
    shop = await manual_shop(admin)

    def buyer(page):
        answer_checkout(
            page, {"type": "token", "provider": "paddle", "token": "txn_01", "publishableKey": "k"}
        )
        pick(page, shop_site.page_url(project=shop.project_id, product="book"))
        expect(page.get_by_role("alert")).to_have_text(
            "Card payment is not available on this page."
        )
        wait_until(page, "cmEvents.length === 5")
        return page.evaluate("cmEvents")

    events = await in_browser(buyer)
    assert [e["type"] for e in events][2:] == ["cm-checkout-started", "cm-error", "cm-idle"]
    assert events[3]["detail"]["code"] == "card_form_unavailable"


async def test_a_card_form_hook_set_before_the_script_loads_is_kept(admin, shop_site):
    shop = await manual_shop(admin)

    def buyer(page):
        answer_checkout(
            page,
            {"type": "token", "provider": "paddle", "token": "txn_02", "publishableKey": "test_ck"},
        )
        pick(page, shop_site.page_url(project=shop.project_id, product="book", early_card_form="1"))
        wait_until(page, "cardForms.length === 1")
        return page.evaluate("cardForms[0].token")

    assert await in_browser(buyer) == "txn_02"
