"""A buyer clicks through <cm-button> in headless Chromium, against a real node."""

from __future__ import annotations

import re
import time

from browser.harness import ARTIFACTS, in_browser
from playwright.sync_api import expect
from support.client import bearer, manual_shop

from edge.domain.ids import ulid_time_ms

TX_ID = re.compile(r"tx_[0-7][0-9A-HJKMNP-TV-Z]{25}")


async def test_manual_checkout_events_and_reference(admin, http, shop_site):
    shop = await manual_shop(admin)
    started_ms = int(time.time() * 1000)

    def buyer(page):
        page.goto(
            shop_site.page_url(project=shop.project_id, product="book", customer_ref="user-42")
        )
        page.get_by_role("button", name="Buy now").click()
        window = page.get_by_role("dialog", name="A book")
        choice = window.get_by_role("button", name=re.compile("Pay by mail"))
        expect(choice).to_contain_text("€19.99")
        expect(choice).to_be_focused()
        expect(page.locator("cm-button").locator("[part=spinner]")).to_be_visible()
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=ARTIFACTS / "payment-window.png")
        choice.click()
        code = window.locator("[part=code]")
        expect(code).to_have_text(re.compile(r"CM-[0-9A-Z]{4}-[0-9A-Z]{4}-[0-9A-Z]"))
        page.screenshot(path=ARTIFACTS / "payment-window-reference.png")
        return {
            "events": page.evaluate("cmEvents"),
            "code": code.text_content(),
            "amount": window.locator(".amount-due").text_content(),
            "address": window.locator("[part=address]").inner_text(),
            "spinner_hidden": page.locator("cm-button").locator("[part=spinner]").is_hidden(),
        }

    seen = await in_browser(buyer)
    events = seen["events"]
    assert [e["type"] for e in events] == [
        "cm-busy",
        "cm-load-providers",
        "cm-checkout-started",
        "cm-idle",
    ]
    assert all(e["bubbles"] and e["cancelable"] and e["composed"] for e in events)
    assert all(e["target"] == "cm-button" for e in events)
    assert events[0]["detail"] == events[1]["detail"] == events[3]["detail"] == {}
    started = events[2]["detail"]
    assert set(started) == {"provider", "kind", "txId", "productId"}
    assert (started["provider"], started["kind"], started["productId"]) == (
        "manual",
        "manual",
        "book",
    )
    assert TX_ID.fullmatch(started["txId"])
    assert seen["amount"] == "€19.99"
    # the country by its name in the buyer's language (the page is en-GB), not its code
    assert seen["address"].split("\n") == ["Shop Ltd", "1 Main St", "London", "United Kingdom"]
    assert seen["spinner_hidden"]

    # The id the page saw is the transaction the node stored, with the buyer's reference.
    tx = (
        await http.get(
            f"/api/projects/{shop.project_id}/transactions/{started['txId']}",
            headers=bearer(shop.live_key),
        )
    ).json()
    assert tx["customerRef"] == "user-42" and tx["reference"] == seen["code"]
    assert tx["status"] == "pending" and tx["isTest"] is False
    assert started_ms - 1000 <= ulid_time_ms(started["txId"][3:]) <= int(time.time() * 1000)
