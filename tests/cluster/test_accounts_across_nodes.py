"""Accounts on two nodes of one PostgreSQL store: a change that reads, then writes (an e-mail
taken, a login's code spent, a password reset) holds against the same change on the other node
at the same moment. Each race is made to happen: node a's commit is held in its writer (the
tests' seam) after its reads, while node b runs the same change to its end."""

from __future__ import annotations

import threading
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import trio
from support.client import Admin
from support.cluster_nodes import cluster_node
from support.postgres import require_psycopg
from support.waits import bound

require_psycopg()

from edge.domain import totp  # noqa: E402
from edge.node import RunningNode  # noqa: E402
from edge.store.writer import Ticket  # noqa: E402

PASSWORD = "a long enough password"
NEW_PASSWORD = "another long password"


@dataclass
class Pair:
    a: RunningNode
    b: RunningNode
    to_a: httpx.AsyncClient
    to_b: httpx.AsyncClient


@pytest.fixture
async def pair(tmp_path: Path, pg_url: str) -> AsyncIterator[Pair]:
    """Two nodes of one cluster, and a client of each."""
    async with (
        trio.open_nursery() as nursery,
        cluster_node(nursery, tmp_path / "a", pg_url, "node-a") as a,
        cluster_node(nursery, tmp_path / "b", pg_url, "node-b", like=tmp_path / "a") as b,
        httpx.AsyncClient(base_url=a.url, timeout=bound(30)) as to_a,
        httpx.AsyncClient(base_url=b.url, timeout=bound(30)) as to_b,
    ):
        yield Pair(a, b, to_a, to_b)


@asynccontextmanager
async def held_change(node: RunningNode) -> AsyncIterator[trio.Event]:
    """Inside: node's next write of accounts (the change's, made after its reads) waits until
    the block ends; the event is set once it waits."""
    waiting, release = trio.Event(), threading.Event()
    token = trio.lowlevel.current_trio_token()

    def fault(group: Sequence[Ticket]) -> None:
        changes = any(db == "accounts" for ticket in group for db, _, _ in ticket.ops)
        if changes and not release.is_set():
            token.run_sync_soon(waiting.set)
            release.wait(30)

    with node.ctx.writer.inject(fault):
        try:
            yield waiting
        finally:
            release.set()


async def test_one_e_mail_signed_up_on_two_nodes_at_once_is_one_account(pair: Pair) -> None:
    body = {"email": "twice@example.com", "password": PASSWORD}
    a, to_a, to_b = pair.a, pair.to_a, pair.to_b
    answers: dict[str, httpx.Response] = {}

    async def sign_up_on_a() -> None:
        answers["a"] = await to_a.post("/api/accounts", json=body)

    async with trio.open_nursery() as racing, held_change(a) as waiting:
        racing.start_soon(sign_up_on_a)
        await waiting.wait()  # a found the e-mail free and waits to write
        answers["b"] = await to_b.post("/api/accounts", json=body)
        assert answers["b"].status_code == 201, answers["b"].text
    assert answers["a"].status_code == 409, answers["a"].text
    assert answers["a"].json()["error"]["code"] == "account_exists"
    admin = Admin(a.url, a.ctx.settings.admin_token)
    listed = await admin.http.get("/api/manage/accounts", params={"email": body["email"]})
    assert [item["accountId"] for item in listed.json()["items"]] == [
        answers["b"].json()["accountId"]
    ]
    await admin.aclose()


async def test_a_login_code_is_spent_once_across_nodes(pair: Pair) -> None:
    email = "codes@example.com"
    a, b, to_a, to_b = pair.a, pair.b, pair.to_a, pair.to_b
    assert (
        await to_a.post("/api/accounts", json={"email": email, "password": PASSWORD})
    ).status_code == 201
    session = await to_a.post("/api/session", json={"email": email, "password": PASSWORD})
    csrf = {"Cm-Csrf": session.json()["csrfToken"]}
    started = await to_a.post("/api/account/two-factor", json={"password": PASSWORD}, headers=csrf)
    secret = started.json()["secret"]
    step = totp.step_at(time.time())
    confirmed = await to_a.post(
        "/api/account/two-factor/confirm",
        json={"code": totp.code_at(secret, step)},
        headers=csrf,
    )
    assert confirmed.status_code == 200, confirmed.text
    login = await to_b.post("/api/session", json={"email": email, "password": PASSWORD})
    assert login.status_code == 202, login.text
    second = {"challenge": login.json()["challenge"], "code": totp.code_at(secret, step + 1)}
    answers: dict[str, httpx.Response] = {}

    async def finish_on_a() -> None:
        async with httpx.AsyncClient(base_url=a.url, timeout=bound(30)) as fresh:
            answers["a"] = await fresh.post("/api/session/two-factor", json=second)

    async with trio.open_nursery() as racing, held_change(a) as waiting:
        racing.start_soon(finish_on_a)
        await waiting.wait()  # a took the code and waits to write
        async with httpx.AsyncClient(base_url=b.url, timeout=bound(30)) as fresh:
            answers["b"] = await fresh.post("/api/session/two-factor", json=second)
        assert answers["b"].status_code == 200, answers["b"].text
    assert answers["a"].status_code == 401, answers["a"].text
    assert answers["a"].json()["error"]["code"] == "challenge_expired"


async def test_a_session_made_while_the_password_is_reset_elsewhere_ends(pair: Pair) -> None:
    email = "reset@example.com"
    a, to_a, to_b = pair.a, pair.to_a, pair.to_b
    made = await to_a.post("/api/accounts", json={"email": email, "password": PASSWORD})
    assert made.status_code == 201, made.text
    admin = Admin(a.url, a.ctx.settings.admin_token)
    link = await admin.ok(
        "POST", f"/api/manage/accounts/{made.json()['accountId']}/reset-link", status=201
    )
    await admin.aclose()
    token = link["url"].split("token=", 1)[1]
    answers: dict[str, httpx.Response] = {}

    async def reset_on_a() -> None:
        answers["reset"] = await to_a.post(
            "/api/accounts/password-reset/complete",
            json={"token": token, "password": NEW_PASSWORD},
        )

    async with trio.open_nursery() as racing, held_change(a) as waiting:
        racing.start_soon(reset_on_a)
        await waiting.wait()  # a scanned the account's sessions (none) and waits to write
        # b logs in with the old password now: a session a's scan did not see
        login = await to_b.post("/api/session", json={"email": email, "password": PASSWORD})
        assert login.status_code == 200, login.text
        assert (await to_b.get("/api/account")).status_code == 200
    assert answers["reset"].status_code == 200, answers["reset"].text
    # whoever knew the old password is out, on every node
    assert (await to_b.get("/api/account")).status_code == 401
    to_a.cookies = to_b.cookies
    assert (await to_a.get("/api/account")).status_code == 401
    again = await to_b.post("/api/session", json={"email": email, "password": NEW_PASSWORD})
    assert again.status_code == 200, again.text


async def test_a_session_ended_on_one_node_is_not_extended_back_on_another(pair: Pair) -> None:
    a, to_a, to_b = pair.a, pair.to_a, pair.to_b
    email = "sliding@example.com"
    made = await to_b.post("/api/accounts", json={"email": email, "password": PASSWORD})
    assert made.status_code == 201, made.text
    login = await to_b.post("/api/session", json={"email": email, "password": PASSWORD})
    assert login.status_code == 200, login.text
    to_a.cookies = to_b.cookies
    real = a.ctx.clock_ms
    a.ctx.clock_ms = lambda: real() + 2 * 86_400_000  # a day and more of use: a extends it
    async with held_change(a) as waiting:
        assert (await to_a.get("/api/account")).status_code == 200
        await waiting.wait()  # a's new expiry, made from the session as it read it, waits
        out = await to_b.delete("/api/session", headers={"Cm-Csrf": login.json()["csrfToken"]})
        assert out.status_code == 200, out.text
    await a.ctx.writer.write([])  # a's held write has had its turn
    to_b.cookies = to_a.cookies
    assert (await to_b.get("/api/account")).status_code == 401
    assert (await to_a.get("/api/account")).status_code == 401
