"""The card-form hand-off with Paddle (CONTRACT 5): on a page that set no ``cardForm`` hook,
picking Paddle ends in ``card_form_unavailable`` before any checkout is made: nothing is left
pending at the node, and no transaction is made at Paddle. (The demo shop's hook, the card
form, Pay and ``succeeded``: tests/browser/test_demo_shop.py.)"""

from __future__ import annotations

import re
from typing import Any

from browser.harness import in_browser, wait_until
from playwright.sync_api import expect
from support.paddle_shop import paddle_shop


async def test_a_real_token_without_a_card_form_is_an_error(admin, http, paddle, shop_site):
    project_id = await admin.project(
        successUrl=f"{shop_site.url}/thanks",
        cancelUrl=f"{shop_site.url}/cart",
        allowedOrigins=[shop_site.url],
    )
    await admin.product(project_id)
    await paddle_shop(admin, paddle, project_id=project_id)

    def buyer(page: Any) -> list[Any]:
        page.goto(shop_site.page_url(project=project_id, product="book", mode="test"))
        page.get_by_role("button", name="Buy now").click()
        page.get_by_role("button", name=re.compile("Card")).click()
        expect(page.get_by_role("alert")).to_have_text(
            "Card payment is not available on this page."
        )
        wait_until(page, "cmEvents.length === 5")
        return list(page.evaluate("cmEvents"))

    events = await in_browser(buyer)
    assert [e["type"] for e in events][2:] == ["cm-checkout-started", "cm-error", "cm-idle"]
    assert events[3]["detail"]["code"] == "card_form_unavailable"
    listed = await admin.ok("GET", f"/api/projects/{project_id}/transactions")
    assert listed["items"] == []  # no checkout was made: nothing pending at the node
    made = [t for a in paddle._accounts.values() for t in a.transactions.values()]
    assert made == []  # nor at Paddle
