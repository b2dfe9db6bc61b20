"""A product's payment links on the products page (issue 37): the node's payment page for it
(``/pay/{projectId}/{productId}``), live and ``?mode=test``, each with an accessible Copy link
button (the dashboard's script, no inline script) and a QR code drawn on the node."""

from __future__ import annotations

import html
import re

from support.client import MAILING_ADDRESS, Admin

from edge.dashboard.links import payment_links, payment_url


def test_the_links_of_a_product():
    base = "https://pay.example"
    assert payment_url(base, "prj_a", "book", "live") == "https://pay.example/pay/prj_a/book"
    assert (
        payment_url(base, "prj_a", "book", "test") == "https://pay.example/pay/prj_a/book?mode=test"
    )
    live, test = payment_links(base, "prj_a", "book", "A <book>")
    assert (live.mode, test.mode) == ("live", "test")
    assert live.element_id == "pay-link-book-live"
    assert 'aria-label="QR code of the test payment link for A &lt;book&gt;"' in test.qr_svg


async def test_the_products_page_shows_each_products_links_to_copy_and_scan(node):
    merchant = await Admin.account(node.url, "links@example.com")
    pid = await merchant.project()
    await merchant.product(pid, "book", name="A book")
    manual = {"mailingAddress": MAILING_ADDRESS}
    await merchant.provider(pid, "manual", {"enabled": True, "test": manual})
    answer = await merchant.http.get(f"/dashboard/p/{pid}/products")
    assert answer.status_code == 200
    page = html.unescape(answer.text)
    live, test = f"{node.url}/pay/{pid}/book", f"{node.url}/pay/{pid}/book?mode=test"
    assert f'id="pay-link-book-live" href="{live}">{live}</a>' in page
    assert f'id="pay-link-book-test" href="{test}">{test}</a>' in page
    for mode in ("live", "test"):
        # hidden until the script shows it (without it, the address is there to select)
        assert (
            f'data-copy="pay-link-book-{mode}" aria-label="Copy link ({mode}, A book)" hidden>'
            "Copy link</button>" in page
        )
        assert f'<svg role="img" aria-label="QR code of the {mode} payment link for A book"' in page
    # pay by mail is on in test mode only: the live link would offer nothing, and says so
    live_part = page.split('data-mode="live"')[1].split('data-mode="test"')[0]
    assert "No payment method is offered in live mode yet" in live_part
    assert "No payment method is offered" not in page.split('data-mode="test"')[1]
    assert not re.search(r"<script(?![^>]*\bsrc=)", page)  # no inline script: the CSP's rule
    # the test link opens the node's payment page for the product
    paying = await merchant.http.get(test)
    assert paying.status_code == 200 and paying.headers["content-type"].startswith("text/html")
    await merchant.aclose()
