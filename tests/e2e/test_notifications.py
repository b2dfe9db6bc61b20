"""Notifications to the merchant's server through a real node (CONTRACT 4.8): every stored event
of the endpoint's mode reaches it signed as Standard Webhooks (checked with the official
``standardwebhooks`` package), with the record's version; the attempt log, type filters,
rotation with overlap, 410, replay, and addresses refused when saved."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
import trio
from standardwebhooks import Webhook
from support.asgi import serve_asgi
from support.client import bearer, manual_shop
from support.merchant import Merchant, add_endpoint
from support.waits import notifications_settled, until


@pytest.fixture
async def merchant() -> AsyncIterator[tuple[Merchant, str]]:
    server = Merchant()
    async with trio.open_nursery() as nursery:
        base = await nursery.start(serve_asgi, server)
        yield server, base.replace("127.0.0.1", "localhost") + "/hooks"
        nursery.cancel_scope.cancel()


async def test_every_event_of_its_mode_arrives_signed_with_its_version(node, admin, http, merchant):
    server, url = merchant
    shop = await manual_shop(admin)
    endpoint = await add_endpoint(admin, shop.project_id, url=url, mode="live")
    assert endpoint["secret"].startswith("whsec_") and endpoint["endpointId"].startswith("we_")
    tx = (
        await http.post(f"/api/checkout/manual/{shop.project_id}", json={"productId": "book"})
    ).json()["txId"]
    await http.post(  # a test-mode event: not this endpoint's
        f"/api/checkout/manual/{shop.project_id}", json={"productId": "book", "mode": "test"}
    )
    paid = await http.post(
        f"/api/projects/{shop.project_id}/transactions/{tx}/mark-paid",
        headers=bearer(shop.live_key),
    )
    assert paid.status_code == 200
    await server.wait_for(2)
    await notifications_settled(node)  # nothing more comes: the node owes nothing more
    verifier = Webhook(endpoint["secret"])
    for headers, body in server.got:
        verified = verifier.verify(body, headers)
        assert verified["id"] == headers["webhook-id"]
    # order is not promised (CONTRACT 4.8): two notifications may be under way at once
    sent = sorted(server.events(), key=lambda e: e["version"])
    assert [(e["type"], e["txId"], e["version"]) for e in sent] == [
        ("checkout.created", tx, 1),
        ("manual.marked_paid", tx, 2),
    ]
    feed = (
        await http.get(f"/api/projects/{shop.project_id}/events", headers=bearer(shop.live_key))
    ).json()["items"]
    live = sorted((e for e in feed if not e["isTest"]), key=lambda e: e["version"])
    assert sent == live  # the feed's own events, byte for byte

    attempts = await admin.ok(
        "GET", f"/api/manage/projects/{shop.project_id}/endpoints/{endpoint['endpointId']}/attempts"
    )
    assert sorted((a["status"], a["outcome"], a["attempt"]) for a in attempts["items"]) == [
        (200, "done", 1),
        (200, "done", 1),
    ]


async def test_types_filter_rotation_signs_with_both_and_replay_sends_again(admin, http, merchant):
    server, url = merchant
    shop = await manual_shop(admin)
    pid = shop.project_id
    endpoint = await add_endpoint(admin, pid, url=url, mode="live", types=["manual.marked_paid"])
    eid = endpoint["endpointId"]
    tx = (await http.post(f"/api/checkout/manual/{pid}", json={"productId": "book"})).json()["txId"]
    rotated = await admin.ok(
        "PATCH", f"/api/manage/projects/{pid}/endpoints/{eid}", {"rotateSecret": True}
    )
    assert rotated["secret"] != endpoint["secret"] and rotated["secretRotatedUntil"]
    await http.post(
        f"/api/projects/{pid}/transactions/{tx}/mark-paid", headers=bearer(shop.live_key)
    )
    await server.wait_for(1)
    ((headers, body),) = server.got
    assert len(headers["webhook-signature"].split(" ")) == 2
    for secret in (endpoint["secret"], rotated["secret"]):  # either verifies during the overlap
        assert Webhook(secret).verify(body, headers)["type"] == "manual.marked_paid"

    replay = f"/api/manage/projects/{pid}/endpoints/{eid}/replay"
    since_start = await admin.ok("POST", replay, {}, 202)
    assert since_start["queued"] == 1  # the live events it takes, since the start
    await server.wait_for(2)
    feed = await http.get(f"/api/projects/{pid}/events", headers=bearer(shop.live_key))
    created = [e["id"] for e in feed.json()["items"] if e["type"] == "checkout.created"]
    named = await admin.ok("POST", replay, {"eventIds": created}, 202)
    assert named["queued"] == 1  # an event asked for by name is sent as asked
    await server.wait_for(3)
    assert [e["type"] for e in server.events()] == [
        "manual.marked_paid",
        "manual.marked_paid",
        "checkout.created",
    ]
    assert len({h["webhook-id"] for h, _ in server.got[:2]}) == 1  # the same message again


async def test_a_gone_endpoint_is_disabled(node, admin, http, merchant):
    server, url = merchant
    server.status = 410
    shop = await manual_shop(admin)
    endpoint = await add_endpoint(admin, shop.project_id, url=url, mode="live")
    await http.post(f"/api/checkout/manual/{shop.project_id}", json={"productId": "book"})
    await server.wait_for(1)

    async def disabled() -> dict[str, Any] | None:
        listed = await admin.ok("GET", f"/api/manage/projects/{shop.project_id}/endpoints")
        (view,) = listed["items"]
        return None if view["enabled"] else dict(view)

    # the notifier reports the 410 to the project's actor, which disables the endpoint in a
    # write of its own: nothing announces it outside the node
    view = await until(disabled, what="the endpoint disabled after its 410")
    assert view["disabledReason"] == "the endpoint answered 410 Gone"
    await http.post(f"/api/checkout/manual/{shop.project_id}", json={"productId": "book"})
    await notifications_settled(node)  # what the node will ever send for it is sent
    assert len(server.got) == 1  # nothing more is sent to a disabled endpoint
    assert endpoint["endpointId"] == view["endpointId"]


@pytest.mark.parametrize(
    "url",
    [
        "http://169.254.169.254/latest/meta-data",
        "https://169.254.169.254/hooks",
        "https://127.0.0.1/hooks",
        "https://10.0.0.5/hooks",
        "http://shop.example/hooks",
        "https://2130706433/hooks",
        "https://user:pw@shop.example/hooks",
        "ftp://shop.example/hooks",
    ],
)
async def test_an_address_the_node_must_not_call_is_refused_when_saved(admin, url):
    shop = await manual_shop(admin)
    answer = await admin.http.post(
        f"/api/manage/projects/{shop.project_id}/endpoints", json={"url": url}
    )
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["code"] in ("url_not_allowed", "invalid_request")
    listed = await admin.ok("GET", f"/api/manage/projects/{shop.project_id}/endpoints")
    assert listed["items"] == []


async def test_an_endpoint_answer_shows_no_secret_after_creation(admin, merchant):
    _, url = merchant
    shop = await manual_shop(admin)
    await add_endpoint(admin, shop.project_id, url=url)
    listed = await admin.ok("GET", f"/api/manage/projects/{shop.project_id}/endpoints")
    project = await admin.ok("GET", f"/api/manage/projects/{shop.project_id}")
    assert "whsec_" not in json.dumps(listed) + json.dumps(project)
    assert "secret" not in listed["items"][0]


async def test_an_endpoint_with_a_query_is_called_with_it(node, admin, http):
    """A receiver that takes a token in its address (CONTRACT 4.8 names no rule against a
    query) is called at that address, query and all."""
    seen: list[bytes] = []

    async def receiver(scope: dict[str, Any], body: bytes) -> tuple[int, bytes]:
        seen.append(scope["query_string"])
        return 200, b""

    async with trio.open_nursery() as nursery:
        base = await nursery.start(serve_asgi, receiver)
        url = base.replace("127.0.0.1", "localhost") + "/hooks?token=abc&from=edge"
        shop = await manual_shop(admin)
        endpoint = await add_endpoint(admin, shop.project_id, url=url)
        assert endpoint["url"] == url
        await http.post(f"/api/checkout/manual/{shop.project_id}", json={"productId": "book"})
        await until(lambda: seen, what="the notification")
        assert seen == [b"token=abc&from=edge"]
        nursery.cancel_scope.cancel()
