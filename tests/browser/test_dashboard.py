"""The dashboard as a merchant uses it, in a real Chromium (CONTRACT 4.7): sign up free, create a
project, add a product, enable pay-by-mail and a card provider with test credentials (the
secret shown back only as set and its last 4), copy a webhook address, create an API key shown
once, copy the snippet and buy through the live preview, find the checkout under Transactions
by its Reference, open it, Mark paid and refund part of it. Screenshots of each page are kept
as test artifacts."""

from __future__ import annotations

import re
from typing import Any

from browser.harness import ARTIFACTS, in_browser, require_browser
from playwright.sync_api import expect
from support.client import Admin, bearer, post_checkout
from support.stripe_shop import stripe_shop

PASSWORD = "a long enough password"


def shot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"dashboard-{name}.png"), full_page=True)


async def test_a_merchant_runs_a_shop_from_the_dashboard(node, http, sim):
    require_browser()
    secret_key = "sk_test_dash0123456789abcdefghij"

    dialogs: list[str] = []

    def merchant(page: Any) -> dict[str, str]:
        page.on("dialog", lambda dialog: dialogs.append(dialog.message))  # alert(1) must not run
        page.goto(f"{node.url}/")  # the node's own address lands on the dashboard
        expect(page.get_by_role("heading", name="Log in")).to_be_visible()
        shot(page, "login")
        page.get_by_label("Password (10 characters or more)").fill("short")
        page.locator("#signup-email").fill("shop@example.com")
        page.get_by_role("button", name="Sign up").click()
        expect(page.get_by_role("alert")).to_contain_text("at least 10 characters")
        page.locator("#signup-email").fill("shop@example.com")
        page.get_by_label("Password (10 characters or more)").fill(PASSWORD)
        page.get_by_role("button", name="Sign up").click()
        expect(page.get_by_role("heading", name="Projects")).to_be_visible()

        page.get_by_label("Name").fill("<script>alert(1)</script> Books")
        page.get_by_label("Success address").fill("https://shop.example/thanks")
        page.get_by_label("Cancel address").fill("https://shop.example/cart")
        page.get_by_label("Other allowed origins").fill(f"https://shop.example {node.url}")
        page.get_by_role("button", name="Create project").click()
        expect(page.get_by_role("heading", name="<script>alert(1)</script> Books")).to_be_visible()
        project_id = page.url.split("/p/")[1].split("/")[0]
        shot(page, "overview-empty")

        nav = page.get_by_role("navigation", name="Project")
        nav.get_by_role("link", name="Products").click()
        page.get_by_label("Id").fill("book")
        page.get_by_label("Name").fill("A book")
        page.get_by_label("Amount").fill("19.99")
        page.get_by_role("button", name="Save product").click()
        expect(page.get_by_role("cell", name="19.99 EUR")).to_be_visible()
        page.get_by_label("Id").fill("pro")
        page.get_by_label("Name").fill("Pro")
        page.get_by_label("Amount").fill("9")
        page.get_by_label("Kind").select_option("subscription")
        page.get_by_role("button", name="Save product").click()
        expect(page.get_by_role("cell", name="9.00 EUR / month")).to_be_visible()
        page.get_by_label("Amount").fill("-3")
        page.get_by_label("Id").fill("bad")
        page.get_by_label("Name").fill("Bad")
        page.get_by_role("button", name="Save product").click()
        expect(page.get_by_role("alert")).to_be_visible()  # the API's own words, by the field
        shot(page, "products")

        nav.get_by_role("link", name="Payment methods").click()
        manual = page.locator("section#manual form[data-mode=test]")
        manual.get_by_label("Name on the mailing address").fill("Books Ltd")
        manual.get_by_label("Address lines").fill("1 Main Street\nLondon")
        manual.get_by_label("Country (2 letters)").fill("GB")
        manual.get_by_role("button", name="Save test manual").click()
        stripe = page.locator("section#stripe form[data-mode=test]")
        # plain labels, and where in Stripe's dashboard each value is
        expect(stripe.locator("#stripe-test-secretKey-help")).to_contain_text(
            "Developers > API keys"
        )
        stripe.get_by_label("Secret key", exact=True).fill(secret_key)
        stripe.get_by_label("Publishable key", exact=True).fill("pk_test_dash0123456789abcdefghij")
        stripe.get_by_label("Webhook signing secret", exact=True).fill(
            "whsec_dashboard_secret_9f3k"
        )
        stripe.locator("#stripe-test-apiBase").fill(sim.url)
        stripe.get_by_role("button", name="Save test stripe").click()
        stripe = page.locator("section#stripe form[data-mode=test]")
        expect(stripe.get_by_label("Webhook signing secret", exact=True)).to_have_attribute(
            "placeholder", "set, ...9f3k"
        )
        expect(stripe.locator("#stripe-test-check")).to_have_text(
            "Tried with Stripe when saved: accepted."
        )
        stripe.get_by_role("button", name="Try with Stripe").click()
        stripe = page.locator("section#stripe form[data-mode=test]")
        expect(stripe.locator("#stripe-test-check")).to_have_text(
            "Tried with Stripe when saved: accepted."
        )
        shot(page, "methods-stripe-tried")
        # a key Stripe refuses (rolled in its dashboard): said beside the field, nothing saved
        rolled = "sk_test_rolled0123456789abcdefghij"
        sim.refused_keys.add(rolled)
        stripe.get_by_label("Secret key", exact=True).fill(rolled)
        stripe.get_by_role("button", name="Save test stripe").click()
        stripe = page.locator("section#stripe form[data-mode=test]")
        expect(stripe.locator("#stripe-test-secretKey-error")).to_contain_text(
            "Invalid API Key provided"
        )
        expect(stripe.get_by_label("Secret key", exact=True)).to_have_attribute(
            "aria-invalid", "true"
        )
        shot(page, "methods-stripe-refused")
        expect(page.locator("#webhook-stripe")).to_have_text(
            f"{node.url}/webhook/stripe/{project_id}"
        )
        # why a method is not offered, in words; and the merchant's own label and order
        expect(page.locator("section#stripe")).to_contain_text(
            "Live: Stripe has no live credentials yet, so live buyers are not offered card"
        )
        expect(page.locator("section#manual")).to_contain_text(
            "Not offered for Pro (pro): Pay by mail takes one-off payments only"
        )
        display = page.locator("section#manual form.display")
        display.get_by_label("Label").fill("Bank transfer or cheque")
        display.get_by_label("Order").fill("1")
        display.get_by_role("button", name=re.compile("Save how buyers see")).click()
        seen = page.get_by_role("region", name="What buyers see")
        expect(seen.locator("ol.seen").first.locator("li").first).to_contain_text(
            "Bank transfer or cheque"
        )
        shot(page, "methods")
        seen.screenshot(path=str(ARTIFACTS / "dashboard-methods-buyers-see.png"))
        page.locator("section#manual").screenshot(
            path=str(ARTIFACTS / "dashboard-methods-manual.png")
        )

        nav.get_by_role("link", name="API keys").click()
        page.get_by_label("Name").fill("web server")
        page.get_by_role("button", name="Create key").click()
        key = page.locator("#new-key").inner_text()
        assert key.startswith("cmk_test_")
        expect(page.get_by_role("button", name="Copy")).to_be_visible()
        shot(page, "key-once")
        page.reload()  # post/redirect/get: a reload neither shows it again nor makes another
        expect(page.locator("#new-key")).to_have_count(0)
        expect(page.get_by_role("cell", name="web server", exact=True)).to_have_count(1)
        nav.get_by_role("link", name="API keys").click()  # shown once: never again
        expect(page.locator("#new-key")).to_have_count(0)
        expect(page.get_by_role("cell", name=f"cmk_test_...{key[-4:]}")).to_be_visible()

        nav.get_by_role("link", name="Notifications").click()
        page.get_by_label("Address").fill("http://localhost:9/hooks")  # nothing listens there
        page.get_by_label("Mode").select_option("test")
        page.get_by_role("button", name="Add endpoint").click()
        expect(page.locator("#new-secret")).to_be_visible()

        nav.get_by_role("link", name="Button").click()
        snippet = page.locator("#snippet").inner_text()
        assert f'project="{project_id}"' in snippet and 'integrity="sha384-' in snippet
        page.locator(".preview cm-button").get_by_role("button").click()
        page.get_by_role("button", name=re.compile("Bank transfer or cheque")).click()
        reference = page.get_by_text(re.compile(r"CM-[0-9A-Z]{4}-[0-9A-Z]{4}-[0-9A-Z]")).first
        expect(reference).to_be_visible()
        code = re.search(r"CM-[0-9A-Z]{4}-[0-9A-Z]{4}-[0-9A-Z]", reference.inner_text()).group(0)
        shot(page, "button-preview")
        page.keyboard.press("Escape")

        nav.get_by_role("link", name="Transactions").click()
        page.get_by_label("Reference code (pay by mail)").fill(code)
        page.get_by_role("button", name="Show").click()
        row = page.locator("tbody tr")
        expect(row).to_have_count(1)
        tx_id = row.get_by_role("link").inner_text()
        assert tx_id.startswith("tx_")
        expect(row).to_contain_text("pending")
        shot(page, "transactions")
        row.get_by_role("link").click()
        page.get_by_label("Note (optional)").fill("cheque 1042")
        page.get_by_role("button", name="Mark paid").click()
        expect(page.get_by_role("heading", name="Mark this payment paid?")).to_be_visible()
        shot(page, "confirm-mark-paid")
        page.get_by_role("button", name="Yes, mark it paid").click()
        expect(page.locator(".status").first).to_have_text("succeeded")
        expect(page.get_by_role("cell", name="manual.marked_paid")).to_contain_text("cheque 1042")
        shot(page, "transaction-paid")

        # part of it sent back by hand: pay by mail records the refund at once
        page.get_by_label("Refund (EUR; empty: all that is left)").fill("5")
        page.get_by_label("Reason (optional)").fill("a scuffed cover")
        page.get_by_role("button", name="Refund").click()
        expect(page.get_by_text("5 EUR of")).to_be_visible()
        page.get_by_role("button", name="Yes, refund").click()
        expect(page.locator(".status").first).to_have_text("partially_refunded")
        refunds = page.locator("table.refunds tbody tr")
        expect(refunds).to_have_count(1)
        expect(refunds.first).to_contain_text("5.00 EUR")
        expect(refunds.first).to_contain_text("recorded (sent back by hand)")
        expect(refunds.first).to_contain_text("a scuffed cover")
        shot(page, "transaction-refunded")
        page.get_by_label("Refund (EUR; empty: all that is left)").fill("500")
        page.get_by_role("button", name="Refund").click()
        page.get_by_role("button", name="Yes, refund").click()
        expect(page.get_by_role("alert")).to_contain_text("is left to refund")
        shot(page, "transaction-refund-refused")

        # the endpoint's delivery attempts, as they happened (it refuses connections)
        nav.get_by_role("link", name="Notifications").click()
        attempts = page.locator("table.attempts tbody tr")
        for _ in range(100):
            if attempts.count():
                break
            page.wait_for_timeout(100)
            page.reload()
        expect(attempts.first).to_contain_text("no answer")
        expect(attempts.first).to_contain_text("will retry")
        shot(page, "endpoint-attempts")
        page.locator("section", has=page.locator("table.attempts")).screenshot(
            path=str(ARTIFACTS / "dashboard-endpoint-attempts-table.png")
        )

        nav.get_by_role("link", name="Overview").click()
        expect(page.locator("svg.chart rect")).to_have_count(30)
        shot(page, "overview")
        page.set_viewport_size({"width": 390, "height": 844})  # a phone
        shot(page, "overview-phone")
        # every page is reachable by keyboard: the first Tab lands on a link of the page
        page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.tagName") in ("A", "BUTTON")
        page.set_viewport_size({"width": 960, "height": 720})
        page.get_by_role("button", name="Log out").click()
        expect(page.get_by_role("heading", name="Log in")).to_be_visible()
        page.goto(f"{node.url}/dashboard/p/{project_id}/")
        expect(page.get_by_role("heading", name="Log in")).to_be_visible()  # the session ended
        return {"project": project_id, "tx": tx_id, "key": key}

    done = await in_browser(merchant)
    assert dialogs == []
    status = await http.get(
        f"/status/{done['project']}/{done['tx']}",
        headers={"Authorization": f"Bearer {done['key']}"},
    )
    assert status.json()["status"] == "partially_refunded"
    info = (await http.get(f"/api/projects/{done['project']}/public-info?mode=test")).json()
    assert {p["provider"] for p in info["providers"]} == {"manual", "stripe"}


async def test_the_operator_signs_in_with_the_admin_token_and_sees_every_project(node, admin):
    require_browser()
    await admin.project("Made with the command line")
    merchant = await Admin.account(node.url, "someone@example.com")
    await merchant.project("Someone's shop")
    await merchant.aclose()

    def operator(page: Any) -> None:
        page.goto(f"{node.url}/dashboard/login")
        page.get_by_label("Admin token").fill(node.ctx.settings.admin_token)
        page.get_by_role("button", name="Sign in as the operator").click()
        expect(page.get_by_role("heading", name="Projects")).to_be_visible()
        expect(page.get_by_text("Operator: every project")).to_be_visible()
        # the admin token has no account of its own: no Account link that would refuse it
        expect(page.get_by_role("link", name="Account")).to_have_count(0)
        rows = page.locator("tbody tr")
        expect(rows.filter(has_text="Made with the command line")).to_contain_text(
            "the operator (command line)"
        )
        expect(rows.filter(has_text="Someone's shop")).to_contain_text("someone@example.com")
        shot(page, "operator-projects")

    await in_browser(operator)


async def test_what_a_payment_needs_is_said_handled_and_asked_about_from_its_page(
    node, admin, http, sim
):
    """A card payment that arrived after the merchant canceled its checkout (CONTRACT 4.3a):
    its page says why it needs the merchant, lists the refund made in Stripe's own dashboard
    beside the node's, asks Stripe on a click ("Check with Stripe") and marks it handled with
    a note; handled, it leaves the overview."""
    require_browser()
    shop = await stripe_shop(admin, sim)
    await admin.product(shop.project_id, "ten", name="Ten", amount=10, currency="EUR")
    made = await post_checkout(http, "stripe", shop, "ten", mode="test")
    tx = made.json()["txId"]
    session = made.json()["url"].rsplit("/", 1)[-1]
    canceled = await http.post(
        f"/api/projects/{shop.project_id}/transactions/{tx}/cancel", headers=bearer(shop.test_key)
    )
    assert canceled.status_code == 200
    await sim.complete(session)  # the buyer paid anyway
    await sim.refund(session, 300)  # and 3.00 went back from Stripe's dashboard

    def merchant(page: Any) -> None:
        page.goto(f"{node.url}/dashboard/login")
        page.get_by_label("Admin token").fill(node.ctx.settings.admin_token)
        page.get_by_role("button", name="Sign in as the operator").click()
        page.goto(f"{node.url}/dashboard/p/{shop.project_id}/")
        expect(page.get_by_role("link", name=tx).first).to_be_visible()
        shot(page, "overview-needs-you")
        page.get_by_role("link", name=tx).first.click()
        expect(
            page.get_by_text("Money arrived after this checkout ended (10.00 EUR)")
        ).to_be_visible()
        expect(page.locator("table.provider-refunds tbody tr")).to_contain_text("3.00 EUR")
        page.get_by_role("button", name="Check with Stripe").click()
        expect(page.get_by_text(re.compile("Last asked"))).to_be_visible()
        shot(page, "transaction-needs-you")
        page.get_by_label("What you did (optional)").fill("shipped it after all")
        page.get_by_role("button", name="Mark handled").click()
        expect(page.get_by_role("heading", name="Handled")).to_be_visible()
        expect(page.get_by_text("shipped it after all")).to_be_visible()
        shot(page, "transaction-handled")
        page.goto(f"{node.url}/dashboard/p/{shop.project_id}/")
        # nothing needs the merchant now; the shop has no notification endpoint yet
        expect(page.get_by_text("Nothing yet: finish setting up first.")).to_be_visible()
        expect(page.get_by_role("link", name="Add a notification endpoint")).to_be_visible()
        shot(page, "overview-finish-setting-up")

    await in_browser(merchant)
