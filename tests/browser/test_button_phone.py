"""The payment window on a phone, and a subscription's price (CONTRACT 5): the pay-by-mail
reference code stays on one line at phone widths (a code broken at its hyphens reads as two),
and a subscription shows its price per interval ("€9.00 / month") in the window's header and
in each method of the list. Screenshots are kept as test artifacts."""

from __future__ import annotations

import re
from typing import Any

from browser.harness import ARTIFACTS, in_browser
from playwright.sync_api import expect
from support.client import manual_shop
from support.stripe_shop import stripe_shop

# the lines the code's text is laid out on: one top per line box
CODE_LINES = """() => {
  const code = document.querySelector('cm-button').shadowRoot.querySelector('.code');
  const range = document.createRange();
  range.selectNodeContents(code);
  return new Set([...range.getClientRects()].map((r) => Math.round(r.top))).size;
}"""


async def test_the_reference_code_stays_on_one_line_on_a_phone(admin, shop_site):
    shop = await manual_shop(admin)

    def buyer(page: Any) -> dict[int, int]:
        lines = {}
        for width in (390, 320):  # a common phone, and the narrowest still in use
            page.set_viewport_size({"width": width, "height": 740})
            page.goto(shop_site.page_url(project=shop.project_id, product="book"))
            page.get_by_role("button", name="Buy now").click()
            page.get_by_role("button", name=re.compile("Pay by mail")).click()
            code = page.locator("cm-button").locator("[part=code]")
            expect(code).to_have_text(re.compile(r"CM-[0-9A-Z]{4}-[0-9A-Z]{4}-[0-9A-Z]"))
            ARTIFACTS.mkdir(exist_ok=True)
            page.screenshot(path=ARTIFACTS / f"payment-window-reference-phone-{width}.png")
            lines[width] = page.evaluate(CODE_LINES)
            box = page.locator("cm-button").locator("[part=reference]").bounding_box()
            assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width
        return lines

    assert await in_browser(buyer) == {390: 1, 320: 1}


async def test_a_subscription_shows_its_price_per_month(admin, shop_site, sim):
    shop = await stripe_shop(admin, sim)  # pro-monthly: 9 EUR a month

    def buyer(page: Any) -> list[str]:
        page.goto(shop_site.page_url(project=shop.project_id, product="pro-monthly", mode="test"))
        page.get_by_role("button", name="Buy now").click()
        window = page.get_by_role("dialog", name="Pro")
        expect(window.locator("[part=price]")).to_contain_text("€9.00 / month")
        card = window.get_by_role("button", name=re.compile("Card"))
        expect(card).to_contain_text("€9.00 / month")
        page.screenshot(path=ARTIFACTS / "payment-window-subscription.png")
        return [e.inner_text() for e in window.locator("[part=provider-label]").all()]

    # a subscription is offered only where it can work: no pay by mail
    assert await in_browser(buyer) == ["Card"]
