"""A session alone never changes two-factor login (CONTRACT 4.7): the password is asked in the
same request; every password and code tried counts against the login's limits (10 a minute per
address and e-mail), and the owner is e-mailed of each change."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pyotp
import pytest
import trio
from support.accounts import PASSWORD, signed_in
from support.smtp import Inbox
from support.smtp import mailing_node as mailing

from edge.node import RunningNode


@pytest.fixture
async def mailing_node(tmp_path) -> AsyncIterator[tuple[RunningNode, Inbox]]:
    async with mailing(tmp_path / "data") as running:
        yield running


async def _turned_on(client: httpx.AsyncClient, csrf: dict[str, str]) -> list[str]:
    """Two-factor login on, with the password and the app's code; its recovery codes."""
    started = await client.post(
        "/api/account/two-factor", json={"password": PASSWORD}, headers=csrf
    )
    secret = started.json()["secret"]
    on = await client.post(
        "/api/account/two-factor/confirm", json={"code": pyotp.TOTP(secret).now()}, headers=csrf
    )
    assert on.status_code == 200, on.text
    return list(on.json()["recoveryCodes"])


async def test_turning_it_on_and_off_is_e_mailed_to_the_owner(mailing_node):
    node, inbox = mailing_node
    client, csrf = await signed_in(node.url, "owner@example.com")
    recovery = await _turned_on(client, csrf)
    told = await inbox.wait_for("owner@example.com")
    assert told["Subject"] == "Two-factor login is on"
    assert "If it was not you" in told.get_content()
    off = await client.post(
        "/api/account/two-factor/disable",
        json={"code": recovery[0], "password": PASSWORD},
        headers=csrf,
    )
    assert off.status_code == 200
    for _ in range(200):  # the mail goes out after the answer
        if len(inbox.to("owner@example.com")) == 2:
            break
        await trio.sleep(0.05)
    assert inbox.to("owner@example.com")[1]["Subject"] == "Two-factor login is off"
    await client.aclose()


async def test_guessing_codes_or_passwords_meets_the_login_limit(node):
    client, csrf = await signed_in(node.url, "guess@example.com")  # one login try
    await _turned_on(client, csrf)  # two more
    answers = []
    for guess in range(10):
        answer = await client.post(
            "/api/account/two-factor/disable",
            json={"code": f"{guess:06d}", "password": PASSWORD},
            headers=csrf,
        )
        answers.append(answer.status_code)
    # 3 tries made it here; the 8th guess is the 11th try of the minute
    assert answers[:7] == [401] * 7 and set(answers[7:]) == {429}
    view = (await client.get("/api/account")).json()
    assert view["twoFactor"] is True
    await client.aclose()


async def test_the_password_changes_only_with_the_current_one_and_the_code(mailing_node):
    node, inbox = mailing_node
    client, csrf = await signed_in(node.url, "change@example.com")
    other, _ = await signed_in(node.url, "change@example.com")  # another browser
    new = "a brand new password 3"
    for body, field in (
        ({"newPassword": new}, "password"),  # a stolen session alone
        ({"password": "not the password", "newPassword": new}, "password"),
    ):
        refused = await client.post("/api/account/password", json=body, headers=csrf)
        error = refused.json()["error"]
        assert (refused.status_code, error["code"], error["field"]) == (
            401,
            "reauthentication_required",
            field,
        )
    recovery = await _turned_on(client, csrf)
    codeless = await client.post(
        "/api/account/password", json={"password": PASSWORD, "newPassword": new}, headers=csrf
    )
    assert codeless.json()["error"]["field"] == "code"  # two-factor on: its code too
    changed = await client.post(
        "/api/account/password",
        json={"password": PASSWORD, "newPassword": new, "code": recovery[0]},
        headers=csrf,
    )
    assert changed.status_code == 200, changed.text
    # this browser goes on with its new session; the other one is logged out
    fresh = {"Cm-Csrf": changed.json()["csrfToken"]}
    assert (await client.get("/api/account", headers=fresh)).status_code == 200
    assert (await other.get("/api/account")).status_code == 401
    logged = await other.post("/api/session", json={"email": "change@example.com", "password": new})
    assert logged.status_code == 202  # the new password, then the second factor
    for _ in range(200):
        if any(m["Subject"] == "Your password was changed" for m in inbox.to("change@example.com")):
            break
        await trio.sleep(0.05)
    else:
        raise AssertionError("the owner was not e-mailed")
    await client.aclose()
    await other.aclose()
