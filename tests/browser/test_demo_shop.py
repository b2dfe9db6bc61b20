"""`edge serve --demo` as a person uses it: the shop page, the button, the simulated card page,
and the thank-you page watching the status reach succeeded."""

from __future__ import annotations

import re

import trio
from browser.harness import ARTIFACTS, in_browser, require_browser
from support.nodes import DemoProcess


async def test_buy_in_the_demo_shop_and_watch_it_succeed(tmp_path):
    require_browser()
    demo = await trio.to_thread.run_sync(DemoProcess, tmp_path / "data")
    shop = demo.found["shop page"]
    try:

        def buyer(page):
            page.goto(shop + "/")
            page.get_by_role("button", name="Buy the book").click()
            page.get_by_role("button", name=re.compile("Card")).click()
            page.wait_for_url("**/c/pay/**")
            page.get_by_role("button", name=re.compile("^Pay")).click()
            page.wait_for_url(f"{shop}/thanks**")
            status = page.locator("#rows tr td").nth(3)
            status.filter(has_text="succeeded").wait_for()
            ARTIFACTS.mkdir(exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "demo-thanks.png"))
            return [cell.inner_text() for cell in page.locator("#rows tr td").all()]

        cells = await in_browser(buyer)
    finally:
        await trio.to_thread.run_sync(demo.stop)
    assert cells[0].startswith("tx_") and cells[1:] == ["stripe", "book", "succeeded"]


async def test_pay_with_paddles_card_form_in_the_demo_shop(tmp_path):
    require_browser()
    demo = await trio.to_thread.run_sync(DemoProcess, tmp_path / "data")
    shop = demo.found["shop page"]
    try:

        def buyer(page):
            page.goto(shop + "/")
            page.get_by_role("button", name="Buy the book").click()
            page.get_by_role("button", name=re.compile("Paddle")).click()
            # the shop's cardForm hook got the token: the card form of that Paddle transaction
            page.wait_for_url(re.compile(r"/checkout/txn_[a-z0-9]{26}\?success_url="))
            page.get_by_text("A book").wait_for()
            ARTIFACTS.mkdir(exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "demo-paddle-card-form.png"))
            page.get_by_role("button", name=re.compile("^Pay")).click()
            page.wait_for_url(f"{shop}/thanks**")
            status = page.locator("#rows tr td").nth(3)
            status.filter(has_text="succeeded").wait_for()
            page.screenshot(path=str(ARTIFACTS / "demo-paddle-thanks.png"))
            return [cell.inner_text() for cell in page.locator("#rows tr td").all()]

        cells = await in_browser(buyer)
    finally:
        await trio.to_thread.run_sync(demo.stop)
    assert cells[0].startswith("tx_") and cells[1:] == ["paddle", "book", "succeeded"]
