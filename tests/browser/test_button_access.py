"""Keyboard use of <cm-button>, and a page that needs no button at all."""

from __future__ import annotations

import re

from browser.harness import in_browser, wait_until
from playwright.sync_api import expect
from support.client import manual_shop

FOCUS_IN_WINDOW = """() => {
  const host = document.querySelector('cm-button');
  const inner = host.shadowRoot.activeElement;
  return document.activeElement === host && inner !== null && inner.closest('dialog') !== null;
}"""


async def test_enter_opens_tab_stays_inside_escape_closes(admin, shop_site):
    shop = await manual_shop(admin)

    def buyer(page):
        page.goto(shop_site.page_url(project=shop.project_id, product="book", mode="test"))
        page.keyboard.press("Tab")
        buy = page.get_by_role("button", name="Buy now")
        expect(buy).to_be_focused()
        outline = buy.evaluate("b => getComputedStyle(b).outlineStyle")
        page.keyboard.press("Enter")
        window = page.get_by_role("dialog", name="A book")
        expect(window).to_contain_text("Test mode")
        expect(window.get_by_role("button", name=re.compile("Pay by mail"))).to_be_focused()
        trapped = []
        for key in ["Tab", "Tab", "Tab", "Shift+Tab", "Shift+Tab", "Shift+Tab"]:
            page.keyboard.press(key)
            trapped.append(page.evaluate(FOCUS_IN_WINDOW))
        page.keyboard.press("Escape")
        expect(window).to_have_count(0)
        expect(buy).to_be_focused()
        wait_until(page, "cmEvents.length === 3")
        return page.evaluate("cmEvents"), trapped, outline

    events, trapped, outline = await in_browser(buyer)
    assert all(trapped)
    assert outline == "solid"  # a visible focus ring
    assert [e["type"] for e in events] == ["cm-busy", "cm-load-providers", "cm-idle"]


OWN_UI = """async ([node, project]) => {
  const info = await fetch(`${node}/api/projects/${project}/public-info?productId=book&mode=test`);
  const listed = await info.json();
  const checkout = await fetch(`${node}/api/checkout/manual/${project}`, {
    method: 'POST',
    headers: {'Content-Type': 'application/json'},
    body: JSON.stringify({productId: 'book', mode: 'test', metadata: {customerRef: 'user-7'}}),
  });
  const created = await checkout.json();
  const status = await fetch(`${node}/status/${project}/${created.txId}`);
  return {
    signature: info.headers.get('Cm-Signature'),
    etag: info.headers.get('ETag'),
    requestId: info.headers.get('Cm-Request-Id'),
    providers: listed.providers.map((p) => p.provider),
    checkoutStatus: checkout.status,
    type: created.type,
    reference: created.reference,
    status: (await status.json()).status,
  };
}"""


async def test_a_page_drives_its_own_ui_with_the_same_endpoints(admin, node, shop_site):
    shop = await manual_shop(admin)

    def page_script(page):
        page.goto(shop_site.page_url(button=False))
        assert page.locator("cm-button").count() == 0
        return page.evaluate(OWN_UI, [node.url, shop.project_id])

    seen = await in_browser(page_script)
    assert seen["signature"].startswith("keyid=") and seen["etag"] and seen["requestId"]
    assert seen["providers"] == ["manual"]
    assert (seen["checkoutStatus"], seen["type"], seen["status"]) == (201, "reference", "pending")
    assert seen["reference"].startswith("CM-")
