"""Two-factor login (docs/api.md): turned on with an authenticator app's code, asked for after
the password, taken once; ten one-time recovery codes; turned off by the account with a code or
by the operator. The secret is sealed at rest and the recovery codes kept as hashes."""

from __future__ import annotations

import time

import httpx
import pyotp
import pytest
from support.accounts import PASSWORD, signed_in

from edge.config import DEFAULT_RATE_LIMITS
from edge.domain import totp
from edge.domain.rate import Limit
from edge.store import accounts

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


async def turn_on(client: httpx.AsyncClient, csrf: dict[str, str]) -> tuple[str, list[str]]:
    stolen = await client.post("/api/account/two-factor", headers=csrf)  # the session alone
    assert (stolen.status_code, stolen.json()["error"]["code"]) == (
        401,
        "reauthentication_required",
    )
    started = await client.post(
        "/api/account/two-factor", json={"password": PASSWORD}, headers=csrf
    )
    assert started.status_code == 200, started.text
    secret = started.json()["secret"]
    assert started.json()["otpauthUri"].startswith("otpauth://totp/edge:")
    assert f"secret={secret}" in started.json()["otpauthUri"]
    wrong = await client.post(
        "/api/account/two-factor/confirm", json={"code": "000000"}, headers=csrf
    )
    assert (wrong.status_code, wrong.json()["error"]["code"]) == (401, "invalid_code")
    assert wrong.json()["error"]["field"] == "code"
    # the API reference's shape (1 to 40 characters) is the request's rule; a blank code has
    # that shape and is simply not right (schemathesis found "\x1c" refused as malformed)
    for blank, status in (("\x1c", 401), ("   ", 401), ("", 400), ("1" * 41, 400)):
        refused = await client.post(
            "/api/account/two-factor/confirm", json={"code": blank}, headers=csrf
        )
        assert refused.status_code == status, (blank, refused.text)
    on = await client.post(
        "/api/account/two-factor/confirm", json={"code": pyotp.TOTP(secret).now()}, headers=csrf
    )
    assert on.status_code == 200, on.text
    return secret, on.json()["recoveryCodes"]


def code(secret: str, steps_ahead: int = 0) -> str:
    return totp.code_at(secret, totp.step_at(time.time()) + steps_ahead)


async def log_in(http: httpx.AsyncClient, email: str) -> dict:
    first = await http.post("/api/session", json={"email": email, "password": PASSWORD})
    assert first.status_code == 202, first.text
    assert "set-cookie" not in first.headers  # no session before the second factor
    assert first.json()["twoFactorRequired"] is True
    return first.json()


async def test_turned_on_a_login_asks_for_the_apps_code_and_takes_each_once(node, http):
    client, csrf = await signed_in(node.url, "two@example.com")
    secret, recovery = await turn_on(client, csrf)
    assert len(recovery) == 10 and len(set(recovery)) == 10
    view = (await client.get("/api/account")).json()
    assert (view["twoFactor"], view["recoveryCodesLeft"]) == (True, 10)
    kept = b"".join(k + v for k, v in await node.ctx.store.scan(b"", db=accounts.DB))
    assert secret.encode() not in kept  # sealed
    assert not any(c.replace("-", "").encode() in kept for c in recovery)  # hashes only
    await client.aclose()

    due = await log_in(http, "two@example.com")
    ahead = code(secret, 1)
    wrong = await http.post(
        "/api/session/two-factor", json={"challenge": due["challenge"], "code": "123456"}
    )
    assert (wrong.status_code, wrong.json()["error"]["code"]) == (401, "invalid_code")
    # the code confirmed with is spent: the next step's code (within the window) is taken
    right = await http.post(
        "/api/session/two-factor", json={"challenge": due["challenge"], "code": ahead}
    )
    assert right.status_code == 200 and "cm_session=" in right.headers["set-cookie"]
    assert right.json()["accountId"].startswith("acc_")
    used = await http.post(
        "/api/session/two-factor", json={"challenge": due["challenge"], "code": ahead}
    )
    assert used.json()["error"]["code"] == "challenge_expired"  # a challenge opens one session

    again = await log_in(http, "two@example.com")
    replayed = await http.post(
        "/api/session/two-factor", json={"challenge": again["challenge"], "code": ahead}
    )
    assert replayed.json()["error"]["code"] == "invalid_code"  # a code is taken once
    by_recovery = await http.post(
        "/api/session/two-factor",
        json={"challenge": again["challenge"], "code": recovery[0].upper()},
    )
    assert by_recovery.status_code == 200
    third = await log_in(http, "two@example.com")
    spent = await http.post(
        "/api/session/two-factor", json={"challenge": third["challenge"], "code": recovery[0]}
    )
    assert spent.json()["error"]["code"] == "invalid_code"  # a recovery code works once


async def test_five_wrong_codes_end_the_challenge(node, http):
    client, csrf = await signed_in(node.url, "guess@example.com")
    secret, _ = await turn_on(client, csrf)
    await client.aclose()
    due = await log_in(http, "guess@example.com")
    for n in range(5):
        wrong = await http.post(
            "/api/session/two-factor", json={"challenge": due["challenge"], "code": f"00000{n}"}
        )
        assert wrong.json()["error"]["code"] == "invalid_code"
    late = await http.post(
        "/api/session/two-factor", json={"challenge": due["challenge"], "code": code(secret, 1)}
    )
    assert (late.status_code, late.json()["error"]["code"]) == (401, "challenge_expired")
    forged = await http.post(
        "/api/session/two-factor",
        json={"challenge": due["challenge"], "code": code(secret)},
        headers={"Sec-Fetch-Site": "cross-site"},
    )
    assert forged.json()["error"]["code"] == "csrf_failed"


async def test_the_account_turns_it_off_with_a_code_and_the_operator_without(node, admin, http):
    client, csrf = await signed_in(node.url, "off@example.com")
    secret, recovery = await turn_on(client, csrf)
    busy = await client.post("/api/account/two-factor", json={"password": PASSWORD}, headers=csrf)
    assert busy.json()["error"]["code"] == "two_factor_enabled"
    refused = await client.post(
        "/api/account/two-factor/disable",
        json={"code": "999999", "password": PASSWORD},
        headers=csrf,
    )
    assert refused.json()["error"]["code"] == "invalid_code"
    # a stolen session with a stolen code still lacks the password
    for wrong in ({"code": recovery[3]}, {"code": recovery[3], "password": "not the password"}):
        kept = await client.post("/api/account/two-factor/disable", json=wrong, headers=csrf)
        assert kept.json()["error"]["code"] == "reauthentication_required", wrong
    off = await client.post(
        "/api/account/two-factor/disable",
        json={"code": recovery[3], "password": PASSWORD},
        headers=csrf,
    )
    assert off.status_code == 200 and off.json() == {"twoFactor": False}
    plain = await http.post("/api/session", json={"email": "off@example.com", "password": PASSWORD})
    assert plain.status_code == 200

    await turn_on(client, csrf)
    await client.aclose()
    found = await admin.ok("GET", "/api/manage/accounts?email=off@example.com")
    account_id = found["items"][0]["accountId"]
    assert found["items"][0]["twoFactor"] is True
    removed = await admin.ok("DELETE", f"/api/manage/accounts/{account_id}/two-factor")
    assert removed["twoFactor"] is False
    plain = await http.post("/api/session", json={"email": "off@example.com", "password": PASSWORD})
    assert plain.status_code == 200


async def test_the_account_endpoints_need_the_session_and_its_csrf_token(node, http):
    assert (await http.get("/api/account")).status_code == 401
    client, csrf = await signed_in(node.url, "csrf@example.com")
    forged = await client.post("/api/account/two-factor")
    assert (forged.status_code, forged.json()["error"]["code"]) == (403, "csrf_failed")
    not_started = await client.post(
        "/api/account/two-factor/confirm", json={"code": "123456"}, headers=csrf
    )
    assert not_started.json()["error"]["code"] == "two_factor_not_started"
    await client.aclose()
