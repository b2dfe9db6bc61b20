"""Accounts and sessions (CONTRACT 4.7): sign-up, log in and out, the CSRF token, login limits,
and what an account may see and change through the management and merchant APIs."""

from __future__ import annotations

from collections.abc import AsyncIterator
from functools import partial
from pathlib import Path

import httpx
import pytest
import trio
from support.client import MAILING_ADDRESS, bearer
from support.nodes import node_settings
from support.waits import bound

from edge.node import RunningNode, run_node
from edge.store import accounts
from edge.store.codec import pack, unpack

PASSWORD = "correct horse battery"
BOOK = {"name": "Book", "kind": "payment", "amount": 5, "currency": "EUR"}
PROJECT = {
    "name": "Shop",
    "successUrl": "https://shop.example/ok",
    "cancelUrl": "https://shop.example/no",
    "allowedOrigins": ["https://shop.example"],
}


async def sign_up_and_in(node_url: str, email: str) -> tuple[httpx.AsyncClient, str]:
    """A browser-like client with a session cookie, and the session's CSRF token."""
    client = httpx.AsyncClient(base_url=node_url, timeout=bound(30.0))
    created = await client.post("/api/accounts", json={"email": email, "password": PASSWORD})
    assert created.status_code == 201, created.text
    assert created.json()["accountId"].startswith("acc_") and created.json()["tier"] == "free"
    session = await client.post("/api/session", json={"email": email, "password": PASSWORD})
    assert session.status_code == 200, session.text
    return client, session.json()["csrfToken"]


@pytest.fixture
async def alice(node: RunningNode) -> AsyncIterator[tuple[httpx.AsyncClient, str]]:
    client, csrf = await sign_up_and_in(node.url, "alice@example.com")
    yield client, csrf
    await client.aclose()


@pytest.fixture
async def bob(node: RunningNode) -> AsyncIterator[tuple[httpx.AsyncClient, str]]:
    client, csrf = await sign_up_and_in(node.url, "Bob@Example.com")
    yield client, csrf
    await client.aclose()


async def test_sign_up_refusals(http):
    for body, field in [
        ({"email": "a@example.com", "password": "short"}, "password"),
        ({"email": "not-an-email", "password": PASSWORD}, "email"),
        ({"email": "a@example.com"}, "password"),
        ({"email": "a@example.com", "password": PASSWORD, "tier": "pro"}, "tier"),
    ]:
        refused = await http.post("/api/accounts", json=body)
        assert (refused.status_code, refused.json()["error"]["field"]) == (400, field), body
    first = await http.post("/api/accounts", json={"email": "a@example.com", "password": PASSWORD})
    assert first.status_code == 201
    again = await http.post("/api/accounts", json={"email": "A@example.com", "password": PASSWORD})
    assert (again.status_code, again.json()["error"]["code"]) == (409, "account_exists")


async def test_log_in_sets_a_session_cookie_and_a_wrong_password_is_a_wrong_email(http):
    await http.post("/api/accounts", json={"email": "c@example.com", "password": PASSWORD})
    wrong = await http.post("/api/session", json={"email": "c@example.com", "password": "x" * 12})
    unknown = await http.post("/api/session", json={"email": "z@example.com", "password": PASSWORD})
    assert wrong.status_code == unknown.status_code == 401
    assert wrong.json()["error"] == {**unknown.json()["error"]}
    assert wrong.json()["error"]["code"] == "invalid_credentials"
    right = await http.post("/api/session", json={"email": "C@example.com", "password": PASSWORD})
    assert right.status_code == 200
    cookie = right.headers["set-cookie"]
    assert cookie.startswith("cm_session=") and "HttpOnly" in cookie and "SameSite=Lax" in cookie
    assert right.cookies.get("cm_csrf") == right.json()["csrfToken"]
    assert "Secure" not in cookie  # the node's address is http here
    assert "Max-Age=1209600" in cookie  # 14 days


async def test_an_account_manages_its_own_projects_only(admin, alice, bob):
    (a, a_csrf), (b, b_csrf) = alice, bob
    no_csrf = await a.post("/api/manage/projects", json=PROJECT)
    assert (no_csrf.status_code, no_csrf.json()["error"]["code"]) == (403, "csrf_failed")
    made = await a.post("/api/manage/projects", json=PROJECT, headers={"Cm-Csrf": a_csrf})
    assert made.status_code == 201, made.text
    pid = made.json()["id"]
    assert [p["id"] for p in (await a.get("/api/manage/projects")).json()["items"]] == [pid]
    assert (await b.get("/api/manage/projects")).json()["items"] == []
    operators = await admin.ok("GET", "/api/manage/projects")
    assert pid in [p["id"] for p in operators["items"]]  # the operator sees every project

    unknown = "prj_aaaaaaaaaaaaaaaa"
    for client, csrf, project in [(b, b_csrf, pid), (a, a_csrf, unknown)]:
        headers = {"Cm-Csrf": csrf}
        for method, path, body in [
            ("GET", f"/api/manage/projects/{project}", None),
            ("PATCH", f"/api/manage/projects/{project}", {"name": "Mine now"}),
            ("PUT", f"/api/manage/projects/{project}/products/book", BOOK),
            ("GET", f"/api/projects/{project}/transactions", None),
            ("GET", f"/api/manage/projects/{project}/deliveries", None),
        ]:
            answer = await client.request(method, path, json=body, headers=headers)
            assert (answer.status_code, answer.json()["error"]["code"]) == (
                404,
                "project_not_found",
            ), (method, path)

    tier = await a.patch(
        f"/api/manage/projects/{pid}", json={"tier": "pro"}, headers={"Cm-Csrf": a_csrf}
    )
    assert (tier.status_code, tier.json()["error"]["code"]) == (403, "forbidden")
    await admin.ok("PATCH", f"/api/manage/projects/{pid}", {"tier": "pro"})  # the operator may
    assert (await a.get(f"/api/manage/projects/{pid}")).json()["tier"] == "pro"
    operator_only = await a.get("/api/manage/stats")
    assert operator_only.status_code == 403


async def test_the_dashboards_reads_and_changes_go_through_the_merchant_api(alice, http):
    a, csrf = alice
    headers = {"Cm-Csrf": csrf}
    pid = (await a.post("/api/manage/projects", json=PROJECT, headers=headers)).json()["id"]
    await a.put(f"/api/manage/projects/{pid}/products/book", json=BOOK, headers=headers)
    manual = {"enabled": True, "live": {"mailingAddress": MAILING_ADDRESS}}
    put = await a.put(f"/api/manage/projects/{pid}/providers/manual", json=manual, headers=headers)
    assert put.status_code == 200, put.text
    # a change is visible at once in public-info
    info = (await http.get(f"/api/projects/{pid}/public-info")).json()
    assert [p["provider"] for p in info["providers"]] == ["manual"]
    tx = (await http.post(f"/api/checkout/manual/{pid}", json={"productId": "book"})).json()
    listed = await a.get(f"/api/projects/{pid}/transactions")
    assert [t["id"] for t in listed.json()["items"]] == [tx["txId"]]
    path = f"/api/projects/{pid}/transactions/{tx['txId']}/mark-paid"
    assert (await a.post(path)).json()["error"]["code"] == "csrf_failed"
    paid = await a.post(path, headers=headers)
    assert paid.status_code == 200 and paid.json()["status"] == "succeeded"


async def test_log_out_ends_the_session_on_the_node(alice):
    a, csrf = alice
    cookie = a.cookies.get("cm_session")
    assert (await a.get("/api/manage/projects")).status_code == 200
    refused = await a.delete("/api/session")
    assert refused.json()["error"]["code"] == "csrf_failed"
    out = await a.delete("/api/session", headers={"Cm-Csrf": csrf})
    assert out.status_code == 200 and "cm_session=" in out.headers["set-cookie"]
    # the old cookie, sent again by hand, opens nothing: the session is gone on the node
    a.cookies.set("cm_session", cookie)
    replay = await a.get("/api/manage/projects")
    assert replay.status_code == 401


async def test_the_eleventh_login_in_a_minute_is_limited(http):
    await http.post("/api/accounts", json={"email": "d@example.com", "password": PASSWORD})
    tries = [
        await http.post("/api/session", json={"email": "d@example.com", "password": "y" * 12})
        for _ in range(11)
    ]
    codes = [t.status_code for t in tries]
    assert codes[:10] == [401] * 10 and codes[10] == 429
    # every limited answer says where it stands (CONTRACT 8): the tighter of the address's and
    # the e-mail's buckets, once
    left = [t.headers.get_list("ratelimit-remaining") for t in tries]
    assert left == [[str(n)] for n in range(9, -1, -1)] + [["0"]]
    right = await http.post("/api/session", json={"email": "d@example.com", "password": PASSWORD})
    assert right.status_code == 429  # the limit holds for a right password too, for a minute


async def test_sign_up_closed_leaves_it_to_the_operator(tmp_path: Path):
    settings = node_settings(tmp_path / "data", signup_open=False)
    async with trio.open_nursery() as nursery:
        running: RunningNode = await nursery.start(partial(run_node, settings))
        async with httpx.AsyncClient(base_url=running.url) as client:
            body = {"email": "e@example.com", "password": PASSWORD}
            closed = await client.post("/api/accounts", json=body)
            assert (closed.status_code, closed.json()["error"]["code"]) == (403, "signup_closed")
            by_operator = await client.post(
                "/api/accounts", json=body, headers=bearer(settings.admin_token)
            )
            assert by_operator.status_code == 201
        running.stop.set()


async def test_no_password_or_session_token_is_kept_in_the_clear(node, alice):
    a, csrf = alice
    cookie = a.cookies.get("cm_session")
    assert cookie and csrf
    store = node.ctx.settings.data_dir
    for path in store.rglob("*"):
        if path.is_file():
            raw = path.read_bytes()
            for secret in (PASSWORD, cookie, csrf):
                assert secret.encode() not in raw, (path, secret[:4])


async def test_sign_up_is_limited_per_client_address_but_not_for_the_operator(http, admin):
    codes = []
    for n in range(11):
        made = await http.post(
            "/api/accounts", json={"email": f"s{n}@example.com", "password": PASSWORD}
        )
        codes.append(made.status_code)
    assert codes == [201] * 10 + [429]
    assert int(made.headers["retry-after"]) >= 1
    assert made.json()["error"]["code"] == "rate_limited"
    by_operator = await admin.http.post(
        "/api/accounts", json={"email": "op@example.com", "password": PASSWORD}
    )
    assert by_operator.status_code == 201


async def test_a_session_made_before_stamps_holds_and_is_stamped_when_extended(node, alice):
    """Sessions stored before they carried their password's stamp stay signed in; the next
    extension stamps them, so a later password change ends them like any other."""
    a, _ = alice
    key = accounts.session_key(a.cookies["cm_session"])
    record = unpack(await node.ctx.store.get_raw(key, db=accounts.DB))
    assert "credentials" in record
    await node.ctx.writer.write(
        [(accounts.DB, key, pack({k: v for k, v in record.items() if k != "credentials"}))]
    )
    assert (await a.get("/api/manage/projects")).status_code == 200
    real = node.ctx.clock_ms
    node.ctx.clock_ms = lambda: real() + 2 * 86_400_000
    try:
        assert (await a.get("/api/manage/projects")).status_code == 200
        await node.ctx.writer.write([])  # the extension, queued before, is committed
        extended = unpack(await node.ctx.store.get_raw(key, db=accounts.DB))
        assert extended["credentials"] == record["credentials"]
        assert extended["expiresAt"] > record["expiresAt"]
    finally:
        node.ctx.clock_ms = real
