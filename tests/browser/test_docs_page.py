"""The API reference (/docs) in a real Chromium: styled by its own sheet under the strict
Content-Security-Policy, and readable on a phone (nothing wider than the screen)."""

from __future__ import annotations

from typing import Any

from browser.harness import ARTIFACTS, in_browser, require_browser
from playwright.sync_api import expect


async def test_the_reference_reads_on_a_phone(node):
    require_browser()

    def reader(page: Any) -> None:
        page.set_viewport_size({"width": 390, "height": 844})
        page.goto(f"{node.url}/docs")
        expect(page.get_by_role("heading", level=1)).to_contain_text("API reference")
        # the sheet applied: the body's font is the system one, not the browser's default serif
        font = page.evaluate("getComputedStyle(document.body).fontFamily")
        assert "system-ui" in font, font
        wide = page.evaluate("document.scrollingElement.scrollWidth - window.innerWidth")
        assert wide <= 1, f"the page is {wide}px wider than a phone's screen"
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "docs-phone.png"))

    await in_browser(reader)
