"""The dashboard meets WCAG 2.2 AA in a real Chromium (issue 37, part 3): axe-core finds nothing
on every page and state (signed out: log in, sign up with an error, a forgotten password, a
reset link good and bad, the two-factor challenge and its error; signed in: the projects and a
form with errors, the overview with a method stepped aside, transactions, a transaction's
story with its actions and a refused refund, products with payment links and a QR code open,
payment methods with a refused save, keys with a new key shown once, notification endpoints
with delivery attempts, the button, the account with two-factor enrolment, the confirmation
dialog with focus inside, the no-script confirmation page and a not-found page), at desktop
width, at a phone's (390 x 844) and at 200 % zoom, with reduced motion asked for; no page
scrolls sideways at the narrow widths.

By keyboard: a skip link first, to the main content; every link, button and field reached by
Tab with a visible focus ring (its computed outline), never hidden under something else; the
confirmation dialog takes focus, keeps it (Tab and Shift+Tab wrap), gives it back on Escape
and confirms from the keyboard. Screenshots: test-artifacts/axe-dashboard-*.png."""

from __future__ import annotations

import re
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from browser.axe import assert_accessible, require_axe, screenshot
from browser.harness import in_browser, require_browser
from playwright.sync_api import expect
from support.client import MAILING_ADDRESS, Admin, Shop, post_checkout
from support.smtp import Inbox
from support.smtp import mailing_node as mailing

from edge.domain import totp
from edge.domain.provider_health import FAILING_AFTER
from edge.node import RunningNode
from edge.sim.stripe import StripeSimulator

PASSWORD = "a long enough password"
MERCHANT = "shop@example.com"
GUARDED = "guarded@example.com"  # an account with two-factor login on

# (name, (viewport, Playwright context options)): desktop, a phone, and a 1280 x 800 window at
# 200 % zoom (half the CSS pixels, each drawn twice as large); reduced motion asked for in each.
# The harness sets its own viewport on the context: the page is resized first thing.
DESKTOP = {"width": 1280, "height": 800}
SIZES: dict[str, tuple[dict[str, int], dict[str, Any]]] = {
    "desktop": (DESKTOP, {}),
    "phone": (
        {"width": 390, "height": 844},
        {"device_scale_factor": 2, "is_mobile": True, "has_touch": True},
    ),
    "zoom200": ({"width": 640, "height": 400}, {"device_scale_factor": 2}),
}


@dataclass
class Arranged:
    node: RunningNode
    inbox: Inbox
    project_id: str
    pending_tx: str
    paid_tx: str
    guarded_secret: str


@pytest.fixture
async def mailing_node(tmp_path) -> AsyncIterator[tuple[RunningNode, Inbox]]:
    require_browser()
    require_axe()
    async with mailing(tmp_path / "data") as running:
        yield running


async def _arrange(node: RunningNode, inbox: Inbox, sim: StripeSimulator) -> Arranged:
    """A shop with something on every page: two products, pay by mail in both modes, Stripe
    in test mode (then failing on Stripe's side: stepped aside), keys, an endpoint nobody
    answers, a pending and a paid checkout, a refused webhook; and an account with two-factor
    login on."""
    merchant = await Admin.account(node.url, MERCHANT, PASSWORD)
    async with httpx.AsyncClient(base_url=node.url, timeout=30.0) as http:
        pid = await merchant.project("Books & more")
        await merchant.product(pid, "book", name="A book")
        await merchant.product(
            pid, "pro", name="Pro", kind="subscription", amount=9, interval="month"
        )
        manual = {"mailingAddress": MAILING_ADDRESS}
        await merchant.provider(pid, "manual", {"enabled": True, "test": manual, "live": manual})
        secret = sim.register_endpoint("sk_test_a11y0123456789abcdefghij", f"{node.url}/x")
        stripe = {
            "secretKey": "sk_test_a11y0123456789abcdefghij",
            "publishableKey": "pk_test_a11y0123456789abcdefghij",
            "webhookSecret": secret,
            "apiBase": sim.url,
        }
        await merchant.provider(pid, "stripe", {"enabled": True, "order": 1, "test": stripe})
        shop = Shop(pid, await merchant.key(pid, "live"), await merchant.key(pid, "test"))
        await merchant.ok(
            "POST",
            f"/api/manage/projects/{pid}/endpoints",
            {"url": "http://localhost:9/hooks", "mode": "test"},
            201,
        )
        pending = (await post_checkout(http, "manual", shop, "book")).json()["txId"]
        paid = (await post_checkout(http, "manual", shop, "book")).json()["txId"]
        await merchant.ok("POST", f"/api/projects/{pid}/transactions/{paid}/mark-paid", {})
        sim.fail_next_requests = 10_000  # Stripe down: its checkouts fail, it steps aside
        for _ in range(FAILING_AFTER):
            assert (await post_checkout(http, "stripe", shop, "book")).status_code == 502
        refused = await http.post(
            f"/webhook/stripe/{pid}", content=b"{}", headers={"Stripe-Signature": "t=1,v1=00"}
        )
        assert refused.status_code >= 400
    await merchant.aclose()

    guarded = await Admin.account(node.url, GUARDED, PASSWORD)
    enrolment = await guarded.ok("POST", "/api/account/two-factor", {"password": PASSWORD})
    code = totp.code_at(enrolment["secret"], totp.step_at(time.time()))
    await guarded.ok("POST", "/api/account/two-factor/confirm", {"code": code})
    await guarded.aclose()
    return Arranged(node, inbox, pid, pending, paid, enrolment["secret"])


# -- the checks made on every page -------------------------------------------------------------


class Walk:
    """One browser's walk through the dashboard at one size."""

    def __init__(self, page: Any, size: str, arranged: Arranged) -> None:
        self.page = page
        self.size = size
        self.url = arranged.node.url
        self.arranged = arranged
        self.checked: list[str] = []
        self.failures: list[str] = []  # every page's, said together at the end

    def go(self, path: str) -> None:
        self.page.goto(f"{self.url}{path}")

    def check(self, where: str) -> None:
        """0 axe violations, and no sideways scrolling of the page (1.4.10, 1.4.4); a failure
        is kept and the walk goes on, so one run lists every page's."""
        try:
            assert_accessible(self.page, f"dashboard {self.size} {where}")
        except AssertionError as found:
            self.failures.append(str(found))
        wide = self.page.evaluate(
            "[document.documentElement.scrollWidth, document.documentElement.clientWidth]"
        )
        if wide[0] > wide[1] + 1:
            self.failures.append(f"{where} scrolls sideways at {self.size}: {wide}")
        self.checked.append(where)

    def done(self) -> list[str]:
        assert not self.failures, "\n\n".join(self.failures)
        return self.checked

    def log_in(self, email: str) -> None:
        self.go("/dashboard/login")
        self.page.locator("#login-email").fill(email)
        self.page.locator("#login-password").fill(PASSWORD)
        self.page.get_by_role("button", name="Log in").click()

    def log_out(self) -> None:
        self.page.get_by_role("button", name="Log out").click()
        expect(self.page.get_by_role("heading", name="Log in")).to_be_visible()


def _signed_out_pages(walk: Walk) -> None:
    page = walk.page
    walk.go("/dashboard/login")
    expect(page.get_by_role("heading", name="Log in")).to_be_visible()
    walk.check("login")
    page.locator("#signup-email").fill("new@example.com")
    page.locator("#signup-password").fill("short")
    page.get_by_role("button", name="Sign up").click()
    expect(page.get_by_role("alert")).to_contain_text("at least 10 characters")
    walk.check("sign-up with an error")

    walk.go("/dashboard/forgot")
    walk.check("forgot")
    page.get_by_label("E-mail").fill("not an address")
    page.get_by_role("button", name="Send me a link").click()
    expect(page.get_by_role("alert")).to_be_visible()
    walk.check("forgot with an error")
    page.get_by_label("E-mail").fill(MERCHANT)
    page.get_by_role("button", name="Send me a link").click()
    expect(page.get_by_role("status")).to_be_visible()
    walk.check("forgot sent")
    deadline = time.monotonic() + 10
    while not walk.arranged.inbox.to(MERCHANT):
        assert time.monotonic() < deadline, "no e-mail came"
        time.sleep(0.05)
    body = walk.arranged.inbox.to(MERCHANT)[0].get_content()
    link = re.search(r"http://\S+(/dashboard/reset\?token=\S+)", body).group(1)
    walk.go(link)
    walk.check("reset")
    page.get_by_label("New password (10 characters or more)").fill("short")
    page.get_by_role("button", name="Set the password").click()
    expect(page.get_by_role("alert")).to_be_visible()
    walk.check("reset with an error")
    walk.go("/dashboard/reset?token=nonsense")
    walk.check("reset link unknown")

    walk.log_in(GUARDED)
    expect(page.get_by_role("heading", name="Two-factor login")).to_be_visible()
    walk.check("two-factor challenge")
    page.get_by_label("Code").fill("123456")
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("alert")).to_be_visible()
    walk.check("two-factor challenge with an error")
    step = totp.step_at(time.time()) + 1  # the enrolment used this step's code
    page.get_by_label("Code").fill(totp.code_at(walk.arranged.guarded_secret, step))
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("heading", name="Projects")).to_be_visible()
    walk.go("/dashboard/account")
    walk.check("account with two-factor on")
    walk.log_out()


def _project_pages(walk: Walk) -> None:
    page = walk.page
    pid = walk.arranged.project_id
    base = f"/dashboard/p/{pid}"
    walk.log_in(MERCHANT)
    expect(page.get_by_role("heading", name="Projects")).to_be_visible()
    walk.check("projects")
    page.get_by_role("button", name="Create project").click()
    expect(page.get_by_role("alert")).to_be_visible()
    walk.check("projects with an error")

    walk.go(f"{base}/")
    expect(page.locator(".stepped-aside")).to_contain_text(
        "Stripe (test) is failing on Stripe's side: buyers are offered your other methods"
    )
    walk.check("overview")
    walk.go(f"{base}/transactions")
    walk.check("transactions")
    walk.go(f"{base}/transactions/{walk.arranged.pending_tx}")
    walk.check("transaction pending")
    page.get_by_role("button", name="Mark paid").click()
    dialog = page.get_by_role("dialog", name="Mark this payment paid?")
    expect(dialog).to_be_visible()
    expect(dialog.get_by_role("button", name="No, go back")).to_be_focused()
    walk.check("confirmation dialog")
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()
    walk.go(f"{base}/transactions/{walk.arranged.paid_tx}")
    walk.check("transaction paid")
    page.get_by_label(re.compile(r"^Refund \(EUR")).fill("500")
    page.get_by_role("button", name="Refund").click()
    page.get_by_role("dialog").get_by_role("button", name="Yes, refund").click()
    expect(page.get_by_role("alert")).to_contain_text("is left to refund")
    walk.check("transaction with a refused refund")
    # without the script, the page that asks first (the dialog's words, on a page)
    page.locator("form[data-confirm-title]").first.evaluate(
        "form => { delete form.dataset.confirmTitle; form.requestSubmit(); }"
    )
    expect(page.get_by_role("heading", name=re.compile(r"\?$"))).to_be_visible()
    walk.check("confirmation page")

    walk.go(f"{base}/products")
    expect(page.get_by_role("heading", name="Payment links")).to_be_visible()
    page.locator("#payment-links details summary").first.click()
    expect(
        page.get_by_role("img", name=re.compile("QR code of the live payment link"))
    ).to_be_visible()
    walk.check("products with a QR code open")
    page.get_by_label("Id").fill("bad")
    page.get_by_label("Name", exact=True).fill("Bad")
    page.get_by_label("Amount").fill("-3")
    page.get_by_role("button", name="Save product").click()
    expect(page.get_by_role("alert")).to_be_visible()
    walk.check("products with an error")

    walk.go(f"{base}/methods")
    walk.check("payment methods")
    stripe = page.locator("section#stripe form[data-mode=live]")
    stripe.get_by_label("Secret key", exact=True).fill("not a key")
    stripe.get_by_role("button", name="Save live stripe").click()
    expect(page.get_by_role("alert")).to_be_visible()
    walk.check("payment methods with an error")

    walk.go(f"{base}/keys")
    page.get_by_label("Name").fill("web server")
    page.get_by_role("button", name="Create key").click()
    expect(page.locator("#new-key")).to_be_visible()
    walk.check("keys with a new key")
    walk.go(f"{base}/endpoints")
    expect(page.locator("table.attempts tbody tr").first).to_be_visible()
    walk.check("endpoints with attempts")
    page.get_by_label("Address").fill("not an address")
    page.get_by_role("button", name="Add endpoint").click()
    expect(page.get_by_role("alert")).to_be_visible()
    walk.check("endpoints with an error")
    walk.go(f"{base}/button")
    walk.check("button")

    walk.go("/dashboard/account")
    walk.check("account")
    page.get_by_label("Your password").fill(PASSWORD)
    page.get_by_role("button", name="Set up two-factor login").click()
    expect(page.get_by_role("img", name="QR code for your authenticator app")).to_be_visible()
    walk.check("two-factor enrolment")
    page.get_by_label("Code from the app").fill("000000")
    page.get_by_role("button", name="Turn on two-factor login").click()
    expect(page.get_by_role("alert")).to_be_visible()
    walk.check("two-factor enrolment with an error")

    walk.go("/dashboard/p/prj_aaaaaaaaaaaaaaaa/")
    expect(page.get_by_role("heading", name="Not found")).to_be_visible()
    walk.check("not found")


@pytest.mark.parametrize("size", list(SIZES))
async def test_every_dashboard_page_and_state_passes_axe(mailing_node, sim, size):
    node, inbox = mailing_node
    arranged = await _arrange(node, inbox, sim)

    viewport, options = SIZES[size]

    def merchant(page: Any) -> list[str]:
        page.set_viewport_size(viewport)
        assert page.evaluate("matchMedia('(prefers-reduced-motion: reduce)').matches")
        walk = Walk(page, size, arranged)
        _signed_out_pages(walk)
        _project_pages(walk)
        return walk.done()

    checked = await in_browser(merchant, reduced_motion="reduce", **options)
    assert len(checked) == 32, checked


# -- the keyboard ------------------------------------------------------------------------------

# Every element a person acts on, visible now, numbered (data-kb) to be recognised when focused.
ACTIONABLE_JS = """() => {
  const all = [...document.querySelectorAll(
    'a[href], button, input:not([type=hidden]), select, textarea, summary, [tabindex]')];
  const shown = all.filter((e) => !e.disabled && e.tabIndex >= 0
    && !e.closest('[hidden], dialog:not([open])') && e.getClientRects().length > 0
    && getComputedStyle(e).visibility !== 'hidden' && !e.closest('cm-button'));
  shown.forEach((e, i) => { e.dataset.kb = String(i); });
  return shown.map((e) => e.outerHTML.slice(0, 80));
}"""

# The focused element: its number, its focus ring, and whether anything covers it (2.4.11).
FOCUSED_JS = """() => {
  const e = document.activeElement;
  if (!e || e === document.body) return null;
  const style = getComputedStyle(e);
  const box = e.getClientRects()[0] || e.getBoundingClientRect();  // a wrapped link's first line
  const x = Math.min(Math.max(box.left + box.width / 2, 0), innerWidth - 1);
  const y = Math.min(Math.max(box.top + box.height / 2, 0), innerHeight - 1);
  const hit = document.elementFromPoint(x, y);
  return {
    kb: e.dataset.kb ?? null, tag: e.tagName,
    text: (e.innerText || e.id || e.name || '').slice(0, 40),
    ring: style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) >= 2
      || style.boxShadow !== 'none',
    focusVisible: e.matches(':focus-visible'),
    shown: box.bottom > 0 && box.top < innerHeight && (hit === e || e.contains(hit)),
  };
}"""


def _tab_through(walk: Walk, where: str) -> None:
    """Opens ``where`` and Tabs from the top of the page to its end: the skip link first, every
    actionable element reached, each with a visible ring and not hidden under anything."""
    walk.go(where)
    page = walk.page
    actionable = page.evaluate(ACTIONABLE_JS)
    reached: set[str] = set()
    for step in range(len(actionable) + 3):
        page.keyboard.press("Tab")
        focused = page.evaluate(FOCUSED_JS)
        if focused is None:
            break
        if step == 0:
            assert focused["text"] == "Skip to main content", (where, focused)
        label = f"{where}: {focused['tag']} {focused['text']!r}"
        assert focused["focusVisible"] and focused["ring"], f"no visible focus ring on {label}"
        assert focused["shown"], f"{label} is focused but hidden from view"
        if focused["kb"] is None or focused["kb"] in reached:
            break  # past the end: the browser's own UI, or round again
        reached.add(focused["kb"])
    missed = [html for i, html in enumerate(actionable) if str(i) not in reached]
    assert not missed, f"{where}: not reached by Tab: {missed}"


async def test_every_action_is_reached_by_keyboard_with_a_visible_focus(mailing_node, sim):
    node, inbox = mailing_node
    arranged = await _arrange(node, inbox, sim)
    pid = arranged.project_id
    base = f"/dashboard/p/{pid}"

    def merchant(page: Any) -> None:
        page.set_viewport_size(DESKTOP)
        walk = Walk(page, "desktop", arranged)
        _tab_through(walk, "/dashboard/login")
        _tab_through(walk, "/dashboard/forgot")
        walk.log_in(MERCHANT)
        expect(page.get_by_role("heading", name="Projects")).to_be_visible()
        # the skip link: shown when focused, it takes focus to the main content
        page.keyboard.press("Tab")
        skip = page.get_by_role("link", name="Skip to main content")
        expect(skip).to_be_focused()
        expect(skip).to_be_in_viewport()
        screenshot(page, "dashboard keyboard skip link", full_page=False)
        page.keyboard.press("Enter")
        assert page.evaluate("document.activeElement.id") == "main"
        page.keyboard.press("Tab")  # the next stop is inside the main content
        assert page.evaluate("document.querySelector('main').contains(document.activeElement)")
        _tab_through(walk, "/dashboard/")
        for path in (
            "/",
            "/transactions",
            f"/transactions/{arranged.pending_tx}",
            f"/transactions/{arranged.paid_tx}",
            "/products",
            "/methods",
            "/keys",
            "/endpoints",
        ):
            _tab_through(walk, base + path)
        _tab_through(walk, "/dashboard/account")

        # the confirmation dialog: opened from the keyboard, focus inside and kept there,
        # given back on Escape; confirmed from the keyboard
        walk.go(f"{base}/keys")
        revoke = page.get_by_role("button", name=re.compile("^Revoke"))
        expect(revoke).to_have_count(2)
        revoke.first.focus()
        page.keyboard.press("Enter")
        dialog = page.get_by_role("dialog", name="Revoke this key?")
        expect(dialog).to_be_visible()
        expect(dialog).to_contain_text("stops working at once")
        inside = "document.querySelector('dialog[open]').contains(document.activeElement)"
        assert page.evaluate(inside)
        screenshot(page, "dashboard keyboard dialog", full_page=False)
        for key in ["Tab", "Tab", "Tab", "Shift+Tab", "Shift+Tab", "Shift+Tab", "Shift+Tab"]:
            page.keyboard.press(key)
            assert page.evaluate(inside), f"focus left the dialog after {key}"
            assert page.evaluate(FOCUSED_JS)["ring"]
        page.keyboard.press("Escape")
        expect(dialog).to_be_hidden()
        expect(revoke.first).to_be_focused()
        page.keyboard.press("Enter")
        expect(dialog).to_be_visible()
        page.keyboard.press("Shift+Tab")  # from No, go back to Yes, revoke it
        expect(dialog.get_by_role("button", name="Yes, revoke it")).to_be_focused()
        page.keyboard.press("Enter")
        expect(page.get_by_role("heading", name="API keys")).to_be_visible()
        expect(page.get_by_role("button", name=re.compile("^Revoke"))).to_have_count(1)

    await in_browser(merchant, reduced_motion="reduce")


async def test_a_payment_link_is_copied_by_keyboard(mailing_node, sim):
    """The products page's Copy link button, pressed from the keyboard: the link is on the
    clipboard and a screen reader is told so."""
    node, inbox = mailing_node
    arranged = await _arrange(node, inbox, sim)

    def merchant(page: Any) -> tuple[str, str]:
        page.context.grant_permissions(["clipboard-read", "clipboard-write"])
        page.set_viewport_size(DESKTOP)
        walk = Walk(page, "desktop", arranged)
        walk.log_in(MERCHANT)
        walk.go(f"/dashboard/p/{arranged.project_id}/products")
        copy = page.get_by_role("button", name="Copy link (test, A book)")
        copy.focus()
        page.keyboard.press("Enter")
        expect(copy).to_have_text("Copied")
        expect(page.locator("#copy-status")).to_have_text("Copied to the clipboard.")
        return page.evaluate("navigator.clipboard.readText()"), page.locator(
            "#pay-link-book-test"
        ).get_attribute("href")

    copied, shown = await in_browser(merchant)
    assert copied == shown == f"{node.url}/pay/{arranged.project_id}/book?mode=test"
