"""Every failure reaches the page as cm-error with a code, and the buyer as a short message."""

from __future__ import annotations

import socket

from browser.harness import in_browser, wait_until
from playwright.sync_api import expect
from support.client import manual_shop


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def error_run(page, url: str) -> tuple[list, str]:
    page.goto(url)
    page.get_by_role("button", name="Buy now").click()
    alert = page.get_by_role("dialog").get_by_role("alert")
    expect(alert).to_be_visible()
    wait_until(page, "cmEvents.length === 4")
    return page.evaluate("cmEvents"), alert.text_content()


def assert_error(events: list, code: str) -> None:
    assert [e["type"] for e in events] == ["cm-busy", "cm-load-providers", "cm-error", "cm-idle"]
    assert events[2]["detail"] == {"code": code, "isError": True}


async def test_unreachable_node_is_a_network_error(admin, shop_site):
    shop = await manual_shop(admin)
    url = shop_site.page_url(
        project=shop.project_id, product="book", base_url=f"http://127.0.0.1:{closed_port()}"
    )
    events, message = await in_browser(lambda page: error_run(page, url))
    assert_error(events, "network_error")
    assert "could not reach the payment service" in message


async def test_one_altered_byte_is_a_signature_failure(admin, shop_site):
    shop = await manual_shop(admin)
    url = shop_site.page_url(project=shop.project_id, product="book")

    def buyer(page):
        def tamper(route):
            answer = route.fetch()
            body = answer.body()
            assert b"1 Main St" in body
            route.fulfill(response=answer, body=body.replace(b"1 Main St", b"9 Main St"))

        page.route("**/public-info*", tamper)
        events, message = error_run(page, url)
        return events, message, page.get_by_text("Main St").count()

    events, message, shown = await in_browser(buyer)
    assert_error(events, "signature_invalid")
    assert "could not be verified" in message
    assert shown == 0  # the forged address never reaches the buyer


async def test_a_project_with_no_provider_is_no_provider(admin, shop_site):
    project_id = await admin.project()
    await admin.product(project_id)
    url = shop_site.page_url(project=project_id, product="book")
    events, message = await in_browser(lambda page: error_run(page, url))
    assert_error(events, "no_provider")
    assert message == "No payment method is available for this purchase yet."


async def test_a_service_error_carries_the_service_code(admin, shop_site):
    shop = await manual_shop(admin)
    url = shop_site.page_url(project=shop.project_id, product="no-such-product")
    events, message = await in_browser(lambda page: error_run(page, url))
    assert_error(events, "product_not_found")
    assert message == "The payment could not be started. Please try again later."
