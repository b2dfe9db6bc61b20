"""A merchant's account in a real Chromium (docs/api.md): a forgotten password reset through
the link the node e-mails (to a real SMTP server on loopback), and two-factor login turned on
from the Account page, then asked for at the next login, with a recovery code for the day the
phone is lost. Screenshots of each page are kept as test artifacts."""

from __future__ import annotations

import re
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from browser.harness import ARTIFACTS, in_browser, require_browser
from playwright.sync_api import expect
from support.smtp import Inbox
from support.smtp import mailing_node as mailing

from edge.config import DEFAULT_RATE_LIMITS
from edge.domain import totp
from edge.domain.rate import Limit
from edge.node import RunningNode

OLD, NEW = "the first password 1", "a brand new password 2"


# every password and code tried counts against the login's limits (10 a minute per address and
# e-mail): these walks try more than a person would in a minute; the limits' own test is
# test_two_factor_limits
pytestmark = pytest.mark.node_settings(
    rate_limits={
        **DEFAULT_RATE_LIMITS,
        "login:ip": Limit(100, 60.0),
        "login:email": Limit(100, 60.0),
    }
)


def shot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"dashboard-{name}.png"), full_page=True)


def log_in(page: Any, url: str, email: str, password: str) -> None:
    page.goto(f"{url}/dashboard/login")
    page.locator("#login-email").fill(email)
    page.locator("#login-password").fill(password)
    page.get_by_role("button", name="Log in").click()


@pytest.fixture
async def mailing_node(tmp_path) -> AsyncIterator[tuple[RunningNode, Inbox]]:
    require_browser()
    async with mailing(tmp_path / "data") as running:
        yield running


async def test_a_forgotten_password_is_reset_through_the_e_mailed_link(mailing_node):
    node, inbox = mailing_node
    async with httpx.AsyncClient(base_url=node.url) as http:
        made = await http.post("/api/accounts", json={"email": "shop@example.com", "password": OLD})
        assert made.status_code == 201

    def merchant(page: Any) -> None:
        page.goto(f"{node.url}/dashboard/login")
        page.get_by_role("link", name="Forgot your password?").click()
        expect(page.get_by_role("heading", name="Forgot your password?")).to_be_visible()
        page.get_by_label("E-mail").fill("shop@example.com")
        shot(page, "forgot")
        page.get_by_role("button", name="Send me a link").click()
        expect(page.get_by_role("status")).to_contain_text("If an account has this e-mail")
        shot(page, "forgot-sent")

        deadline = time.monotonic() + 10
        while not inbox.to("shop@example.com"):
            assert time.monotonic() < deadline, "no e-mail came"
            time.sleep(0.05)
        body = inbox.to("shop@example.com")[0].get_content()
        link = re.search(r"(http://\S+/dashboard/reset\?token=\S+)", body).group(1)

        page.goto(link)
        expect(page.get_by_role("heading", name="Set a new password")).to_be_visible()
        page.get_by_label("New password (10 characters or more)").fill("short")
        page.get_by_role("button", name="Set the password").click()
        expect(page.get_by_role("alert")).to_contain_text("at least 10 characters")
        shot(page, "reset-form")
        page.get_by_label("New password (10 characters or more)").fill(NEW)
        page.get_by_role("button", name="Set the password").click()
        expect(page.get_by_role("status")).to_contain_text("Your password is set")
        shot(page, "reset-done")

        page.goto(link)  # a link works once
        expect(page.get_by_role("alert")).to_contain_text("unknown, used or expired")
        shot(page, "reset-used")

        log_in(page, node.url, "shop@example.com", OLD)
        expect(page.get_by_role("alert")).to_contain_text("wrong")
        log_in(page, node.url, "shop@example.com", NEW)
        expect(page.get_by_role("heading", name="Projects")).to_be_visible()

    await in_browser(merchant)


async def test_two_factor_login_is_turned_on_and_asked_for(node, http):
    require_browser()
    made = await http.post("/api/accounts", json={"email": "safe@example.com", "password": OLD})
    assert made.status_code == 201

    def merchant(page: Any) -> None:
        log_in(page, node.url, "safe@example.com", OLD)
        expect(page.get_by_role("heading", name="Projects")).to_be_visible()
        page.get_by_role("link", name="Account").click()
        expect(page.get_by_role("heading", name="Two-factor login")).to_be_visible()
        shot(page, "account")
        # a session alone (a stolen cookie) cannot turn it on: the password is asked
        page.get_by_role("button", name="Set up two-factor login").click()
        expect(page.get_by_role("alert")).to_contain_text("Give your current password")
        page.get_by_label("Your password").fill(OLD)
        page.get_by_role("button", name="Set up two-factor login").click()
        secret = page.locator("#totp-secret").inner_text().strip()
        expect(page.locator("#otpauth-uri")).to_contain_text(f"secret={secret}")
        # the QR code to scan, drawn on the node as SVG under the strict CSP
        expect(page.get_by_role("img", name="QR code for your authenticator app")).to_be_visible()
        shot(page, "two-factor-setup")
        page.get_by_label("Code from the app").fill("000000")
        page.get_by_role("button", name="Turn on two-factor login").click()
        expect(page.get_by_role("alert")).to_contain_text("not the app's current one")
        assert page.locator("#totp-secret").inner_text().strip() == secret  # the same secret
        now = totp.step_at(time.time())
        page.get_by_label("Code from the app").fill(totp.code_at(secret, now))
        page.get_by_role("button", name="Turn on two-factor login").click()
        codes = page.locator("#recovery-codes").inner_text().split()
        assert len(codes) == 10
        shot(page, "two-factor-recovery-codes")
        page.get_by_role("link", name="Account").click()
        expect(page.locator("#two-factor")).to_contain_text("10 recovery codes left")
        expect(page.locator("#recovery-codes")).to_have_count(0)  # shown once
        page.get_by_role("button", name="Log out").click()

        log_in(page, node.url, "safe@example.com", OLD)
        expect(page.get_by_role("heading", name="Two-factor login")).to_be_visible()
        shot(page, "two-factor-login")
        page.get_by_label("Code").fill("123456")
        page.get_by_role("button", name="Log in").click()
        expect(page.get_by_role("alert")).to_contain_text("not right")
        shot(page, "two-factor-login-wrong")
        page.get_by_label("Code").fill(totp.code_at(secret, now + 1))
        page.get_by_role("button", name="Log in").click()
        expect(page.get_by_role("heading", name="Projects")).to_be_visible()
        page.get_by_role("button", name="Log out").click()

        log_in(page, node.url, "safe@example.com", OLD)
        page.get_by_label("Code").fill(codes[0])  # the phone is lost
        page.get_by_role("button", name="Log in").click()
        expect(page.get_by_role("heading", name="Projects")).to_be_visible()
        page.get_by_role("link", name="Account").click()
        expect(page.locator("#two-factor")).to_contain_text("9 recovery codes left")
        shot(page, "account-two-factor-on")
        # a new password: the current one and a code are asked, and this browser stays in
        password = page.locator("section#password")
        password.get_by_label("Current password").fill(OLD)
        password.get_by_label("New password (10 characters or more)").fill(NEW)
        password.get_by_label("A code from the app, or a recovery code").fill(codes[2])
        password.get_by_role("button", name="Change the password").click()
        expect(page.get_by_role("status")).to_contain_text("Your password is changed")
        shot(page, "account-password-changed")
        two_factor = page.locator("section#two-factor")
        two_factor.get_by_label("Your password").fill(NEW)
        two_factor.get_by_label("A code from the app, or a recovery code").fill(codes[1])
        two_factor.get_by_role("button", name="Turn off two-factor login").click()
        expect(page.get_by_role("button", name="Set up two-factor login")).to_be_visible()

    await in_browser(merchant)
