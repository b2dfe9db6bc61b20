"""The dashboard's pages over HTTP (CONTRACT 4.7): signed out, a page sends to the login;
another account's project is not found, as an unknown one; a form without the session's CSRF
token changes nothing; what is saved shows at the next read and in public-info at once."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial

import httpx
import trio
from support.nodes import node_settings

from edge.node import RunningNode, run_node

PASSWORD = "a long enough password"


@asynccontextmanager
async def signed_in(url: str, email: str) -> AsyncIterator[tuple[httpx.AsyncClient, str]]:
    """A browser-like client signed up through the dashboard, and its pages' CSRF token."""
    async with httpx.AsyncClient(base_url=url, timeout=30.0) as client:
        made = await client.post("/dashboard/signup", data={"email": email, "password": PASSWORD})
        assert made.status_code == 303 and made.headers["location"] == "/dashboard/"
        page = await client.get("/dashboard/")
        found = re.search(r'name="csrf" value="([^"]+)"', page.text)
        assert found
        yield client, found.group(1)


async def new_project(client: httpx.AsyncClient, csrf: str) -> str:
    made = await client.post(
        "/dashboard/projects",
        data={
            "csrf": csrf,
            "name": "Shop",
            "successUrl": "https://shop.example/ok",
            "cancelUrl": "https://shop.example/no",
            "allowedOrigins": "https://shop.example",
        },
    )
    assert made.status_code == 303, made.text
    return str(made.headers["location"]).split("/")[3]


async def test_signed_out_pages_send_to_the_login(http):
    for path in ("/dashboard/", "/dashboard/p/prj_aaaaaaaaaaaaaaaa/"):
        answer = await http.get(path)
        assert (answer.status_code, answer.headers["location"]) == (303, "/dashboard/login")
    login = await http.get("/dashboard/login")
    assert login.status_code == 200 and "no-store" in login.headers["cache-control"]
    assert "'unsafe-inline'" not in login.headers["content-security-policy"]
    assert "frame-ancestors 'none'" in login.headers["content-security-policy"]


async def test_another_accounts_project_is_not_found(node):
    async with (
        signed_in(node.url, "alice@example.com") as (alice, a_csrf),
        signed_in(node.url, "bob@example.com") as (bob, _),
    ):
        pid = await new_project(alice, a_csrf)
        assert (await alice.get(f"/dashboard/p/{pid}/")).status_code == 200
        for project in (pid, "prj_aaaaaaaaaaaaaaaa"):
            for path in ("", "transactions", "products", "methods", "keys", "button"):
                answer = await bob.get(f"/dashboard/p/{project}/{path}")
                assert answer.status_code == 404, (project, path)
                assert "Not found" in answer.text and "project" in answer.text.lower()
        listed = await bob.get("/dashboard/")
        assert pid not in listed.text


async def test_a_form_without_the_csrf_token_changes_nothing(node):
    async with signed_in(node.url, "carol@example.com") as (alice, csrf):
        pid = await new_project(alice, csrf)
        product = {"productId": "book", "name": "Book", "amount": "5", "currency": "EUR"}
        forged = await alice.post(f"/dashboard/p/{pid}/products", data=product)
        assert forged.status_code == 403 and forged.json()["error"]["code"] == "csrf_failed"
        wrong = await alice.post(f"/dashboard/p/{pid}/products", data={**product, "csrf": "x"})
        assert wrong.status_code == 403
        assert "Book" not in (await alice.get(f"/dashboard/p/{pid}/products")).text


async def test_a_saved_change_shows_at_the_next_read_and_in_public_info(node, http):
    async with signed_in(node.url, "dave@example.com") as (alice, csrf):
        pid = await new_project(alice, csrf)
        product = {"productId": "book", "name": "The Book", "amount": "5", "currency": "EUR"}
        saved = await alice.post(f"/dashboard/p/{pid}/products", data={**product, "csrf": csrf})
        assert saved.status_code == 303
        assert "The Book" in (await alice.get(f"/dashboard/p/{pid}/products")).text
        address = {
            "csrf": csrf,
            "mode": "live",
            "enabled": "on",
            "addressName": "Shop Ltd",
            "addressLines": "1 Road",
            "addressCountry": "GB",
        }
        assert (
            await alice.post(f"/dashboard/p/{pid}/methods/manual", data=address)
        ).status_code == 303
        info = (await http.get(f"/api/projects/{pid}/public-info?productId=book")).json()
        assert info["product"]["name"] == "The Book"
        assert [p["provider"] for p in info["providers"]] == ["manual"]
        refused = await alice.post(
            f"/dashboard/p/{pid}/products", data={**product, "amount": "-1", "csrf": csrf}
        )
        assert refused.status_code == 400 and 'role="alert"' in refused.text


async def test_sign_up_closed_is_said_on_the_page(tmp_path):
    settings = node_settings(tmp_path / "data", signup_open=False)
    async with trio.open_nursery() as nursery:
        running: RunningNode = await nursery.start(partial(run_node, settings))
        async with httpx.AsyncClient(base_url=running.url) as client:
            body = {"email": "closed@example.com", "password": PASSWORD}
            refused = await client.post("/dashboard/signup", data=body)
            assert refused.status_code == 403 and "Sign-up is closed" in refused.text
            assert "cm_session" not in refused.headers.get("set-cookie", "")
        running.stop.set()


async def test_a_part_of_an_address_that_is_not_what_it_names_is_400_never_500(node):
    async with signed_in(node.url, "paths@example.com") as (client, csrf):
        pid = await new_project(client, csrf)
        tx = "tx_01M7YS2H2CXEBWK64PPXXP5WHD"
        for path in (
            "/dashboard/p/prj_%01/",
            "/dashboard/p/%7f/products",
            "/dashboard/p/prj_aaaa%0aaaaaaaaaaaa/transactions",
            f"/dashboard/p/{pid}/transactions/tx_%01",
            f"/dashboard/p/{pid}/transactions/%0a",
            f"/dashboard/p/{pid}/transactions/{tx}%1b[31m",
        ):
            answer = await client.get(path)
            assert answer.status_code == 400, path
            assert "text/html" in answer.headers["content-type"]
            assert "This address needs" in answer.text
        for path, data in (
            (f"/dashboard/p/{pid}/products/a%01b/delete", {"csrf": csrf}),
            (f"/dashboard/p/{pid}/keys/key_%00/revoke", {"csrf": csrf}),
            (f"/dashboard/p/{pid}/endpoints/we_x%3fy=1/remove", {"csrf": csrf}),
            (f"/dashboard/p/{pid}/methods/nope%01", {"csrf": csrf}),
            (f"/dashboard/p/{pid}/transactions/{tx}/re%01fund", {"csrf": csrf}),
        ):
            answer = await client.post(path, data=data)
            assert answer.status_code == 400, path


async def test_a_typed_product_id_is_checked_before_it_becomes_part_of_a_path(node):
    async with signed_in(node.url, "typed@example.com") as (client, csrf):
        pid = await new_project(client, csrf)
        product = {"csrf": csrf, "name": "X", "amount": "5", "currency": "EUR"}
        for typed in ("x?y=1", "x/../y", "a\x01b", "x#y", "Upper", ""):
            answer = await client.post(
                f"/dashboard/p/{pid}/products", data={**product, "productId": typed}
            )
            assert answer.status_code == 400, typed
            assert "lower-case letters" in answer.text
        saved = (await client.get(f"/api/manage/projects/{pid}")).json()["products"]
        assert saved == []  # not product x, nor any other
        made = await client.post(f"/dashboard/p/{pid}/products", data={**product, "productId": "x"})
        assert made.status_code == 303


async def test_money_paid_after_the_checkout_ended_can_be_refunded_and_marked_handled(
    node, http, sim
):
    """CONTRACT 4.3a: a flagged transaction's page says why, offers Refund (of the money that
    came late) and Mark handled (with a note); handled, it leaves the overview's list and its
    page shows who handled it, when, and the note."""
    async with signed_in(node.url, "erin@example.com") as (alice, csrf):
        pid = await new_project(alice, csrf)
        api = {"Cm-Csrf": csrf}
        product = {"name": "Ten", "kind": "payment", "amount": 10, "currency": "EUR"}
        put = await alice.put(f"/api/manage/projects/{pid}/products/ten", json=product, headers=api)
        assert put.status_code == 200, put.text
        secret = sim.register_endpoint("sk_test_erin", f"{node.url}/webhook/stripe/{pid}")
        credentials = {
            "secretKey": "sk_test_erin",
            "publishableKey": "pk_test_erin0123456789abcdefghij",
            "webhookSecret": secret,
            "apiBase": sim.url,
        }
        setting = {"enabled": True, "test": credentials}
        put = await alice.put(
            f"/api/manage/projects/{pid}/providers/stripe", json=setting, headers=api
        )
        assert put.status_code == 200, put.text
        made = await http.post(
            f"/api/checkout/stripe/{pid}", json={"productId": "ten", "mode": "test"}
        )
        assert made.status_code == 201, made.text
        tx = made.json()["txId"]
        asked = await alice.post(
            f"/dashboard/p/{pid}/transactions/{tx}/cancel", data={"csrf": csrf}
        )
        assert asked.status_code == 200 and "Cancel this checkout?" in asked.text
        still = (await alice.get(f"/api/projects/{pid}/transactions/{tx}")).json()
        assert still["status"] == "pending"  # asking changed nothing
        canceled = await alice.post(
            f"/dashboard/p/{pid}/transactions/{tx}/cancel", data={"csrf": csrf, "confirmed": "yes"}
        )
        assert canceled.status_code == 303
        await sim.complete(made.json()["url"].rsplit("/", 1)[-1])  # the buyer paid anyway
        page = (await alice.get(f"/dashboard/p/{pid}/transactions/{tx}")).text
        print(re.sub(r"<[^>]+>", " ", page)[-3000:])
        assert "Money arrived after this checkout ended (10.00 EUR)" in page
        assert f"/transactions/{tx}/resolve" in page and f"/transactions/{tx}/refund" in page
        assert tx in (await alice.get(f"/dashboard/p/{pid}/")).text
        handled = await alice.post(
            f"/dashboard/p/{pid}/transactions/{tx}/resolve",
            data={"csrf": csrf, "note": "shipped it anyway"},
        )
        assert handled.status_code == 303, handled.text
        page = (await alice.get(f"/dashboard/p/{pid}/transactions/{tx}")).text
        assert "shipped it anyway" in page and f"/transactions/{tx}/resolve" not in page
        overview = (await alice.get(f"/dashboard/p/{pid}/")).text
        assert "Nothing yet: finish setting up first." in overview  # no endpoint, no live key
        # the late money can still go back: 10.00 is left to refund
        refund = await alice.post(
            f"/dashboard/p/{pid}/transactions/{tx}/refund",
            data={"csrf": csrf, "amount": "10,00", "confirmed": "yes"},  # a decimal comma
        )
        assert refund.status_code == 303, refund.text
