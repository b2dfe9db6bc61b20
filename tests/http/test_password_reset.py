"""Password reset (docs/api.md): the operator's one-time link, and with EDGE_SMTP_URL the
e-mail a person asks for (sent to a real SMTP server on loopback). A link works once, for an
hour, is kept only as its hash, and ends every session of the account; the answer to "forgot
my password" is the same whether or not an account has the address."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from functools import partial
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
import trio
from support.nodes import node_settings
from support.smtp import Inbox, smtp_server
from support.waits import bound

from edge.node import RunningNode, run_node
from edge.store import accounts

OLD, NEW = "the old password 1", "the new password 2"


async def sign_up_and_in(url: str, email: str, *, sign_up: bool = True) -> httpx.AsyncClient:
    client = httpx.AsyncClient(base_url=url, timeout=bound(30.0))
    if sign_up:
        made = await client.post("/api/accounts", json={"email": email, "password": OLD})
        assert made.status_code == 201
    assert (
        await client.post("/api/session", json={"email": email, "password": OLD})
    ).status_code == 200
    return client


async def operator_link(admin, email: str) -> dict:
    found = await admin.ok("GET", f"/api/manage/accounts?email={email}")
    assert [a["email"] for a in found["items"]] == [email]
    return await admin.ok(
        "POST", f"/api/manage/accounts/{found['items'][0]['accountId']}/reset-link", status=201
    )


def token_of(url: str) -> str:
    return parse_qs(urlsplit(url).query)["token"][0]


async def stored_bytes(node: RunningNode) -> bytes:
    return b"".join(k + v for k, v in await node.ctx.store.scan(b"", db=accounts.DB))


async def test_an_operators_link_sets_a_new_password_once_and_ends_every_session(node, admin, http):
    first = await sign_up_and_in(node.url, "m@example.com")
    second = await sign_up_and_in(node.url, "m@example.com", sign_up=False)  # logged in twice
    link = await operator_link(admin, "m@example.com")
    assert link["url"].startswith(f"{node.url}/dashboard/reset?token=")
    token = token_of(link["url"])
    assert token.encode() not in await stored_bytes(node)  # only its hash is kept

    page = await http.get(link["url"].removeprefix(node.url))
    assert page.status_code == 200 and 'name="token"' in page.text

    short = await http.post(
        "/api/accounts/password-reset/complete", json={"token": token, "password": "short"}
    )
    assert (short.status_code, short.json()["error"]["field"]) == (400, "password")
    done = await http.post(
        "/api/accounts/password-reset/complete", json={"token": token, "password": NEW}
    )
    assert done.status_code == 200 and done.json()["email"] == "m@example.com"

    for client in (first, second):  # every session ended
        assert (await client.get("/api/manage/projects")).status_code == 401
        await client.aclose()
    old = await http.post("/api/session", json={"email": "m@example.com", "password": OLD})
    assert old.status_code == 401
    new = await http.post("/api/session", json={"email": "m@example.com", "password": NEW})
    assert new.status_code == 200

    again = await http.post(
        "/api/accounts/password-reset/complete", json={"token": token, "password": "a third one 3"}
    )
    assert (again.status_code, again.json()["error"]["code"]) == (404, "reset_link_invalid")
    gone = await http.get(link["url"].removeprefix(node.url))
    assert gone.status_code == 404 and "unknown, used or expired" in gone.text


async def test_a_link_expires_after_an_hour(node, admin, http):
    await (await sign_up_and_in(node.url, "late@example.com")).aclose()
    token = token_of((await operator_link(admin, "late@example.com"))["url"])
    now = node.ctx.clock_ms()
    node.ctx.clock_ms = lambda: now + 3_600_000
    late = await http.post(
        "/api/accounts/password-reset/complete", json={"token": token, "password": NEW}
    )
    assert (late.status_code, late.json()["error"]["code"]) == (404, "reset_link_invalid")


async def test_only_the_operator_makes_links(node, admin, http):
    client = await sign_up_and_in(node.url, "a@example.com")
    found = await admin.ok("GET", "/api/manage/accounts?email=a@example.com")
    path = f"/api/manage/accounts/{found['items'][0]['accountId']}/reset-link"
    assert (await client.post(path)).status_code == 403  # an account that is not the operator
    assert (await http.post(path)).status_code == 401
    await client.aclose()
    unknown = await admin.http.post(
        "/api/manage/accounts/acc_01M7YS2H2CXEBWK64PPXXP5WHD/reset-link"
    )
    assert (unknown.status_code, unknown.json()["error"]["code"]) == (404, "account_not_found")
    none = await admin.ok("GET", "/api/manage/accounts?email=nobody@example.com")
    assert none == {"items": []}


async def test_without_smtp_a_person_is_sent_to_the_operator(http):
    asked = await http.post("/api/accounts/password-reset", json={"email": "a@example.com"})
    assert (asked.status_code, asked.json()["error"]["code"]) == (403, "reset_by_operator")
    page = await http.get("/dashboard/forgot")
    assert "edge account reset-link" in page.text


@pytest.fixture
async def mailing_node(tmp_path) -> AsyncIterator[tuple[RunningNode, Inbox]]:
    with smtp_server() as (url, inbox):
        settings = node_settings(
            tmp_path / "data", smtp_url=url, smtp_from="shop <pay@shop.example>"
        )
        async with trio.open_nursery() as nursery:
            running: RunningNode = await nursery.start(partial(run_node, settings))
            yield running, inbox
            running.stop.set()


async def test_forgot_password_e_mails_a_link_and_says_the_same_for_an_unknown_address(
    mailing_node,
):
    node, inbox = mailing_node
    client = await sign_up_and_in(node.url, "shop@example.com")
    async with httpx.AsyncClient(base_url=node.url, timeout=bound(30.0)) as http:
        known = await http.post("/api/accounts/password-reset", json={"email": "Shop@Example.com"})
        unknown = await http.post("/api/accounts/password-reset", json={"email": "who@example.com"})
        assert known.status_code == unknown.status_code == 202
        assert known.json() == unknown.json()  # nothing tells whether an account has it

        mail = await inbox.wait_for("shop@example.com")
        assert mail["From"] == "shop <pay@shop.example>"
        link = re.search(r"(http://\S+/dashboard/reset\?token=\S+)", mail.get_content()).group(1)
        # the subject is an e-mail that must never come, and nothing announces a non-event: a
        # window for it, after the one that did come (both asked for at the same moment)
        await trio.sleep(0.2)
        assert inbox.to("who@example.com") == []  # no account, no e-mail

        done = await http.post(
            "/api/accounts/password-reset/complete",
            json={"token": token_of(link), "password": NEW},
        )
        assert done.status_code == 200
        assert (await client.get("/api/manage/projects")).status_code == 401
        new = await http.post("/api/session", json={"email": "shop@example.com", "password": NEW})
        assert new.status_code == 200
        # three a person may ask for an hour per e-mail; the fourth is refused
        codes = [
            (
                await http.post("/api/accounts/password-reset", json={"email": "x@example.com"})
            ).status_code
            for _ in range(4)
        ]
        assert codes[-1] == 429
    await client.aclose()
