"""edge.http.webhooks, the raw ASGI webhook route: the raw body and headers reach the actor,
the 1 MiB limit (declared or streamed), and the route's refusals. (The events themselves:
tests/e2e and tests/providers.)"""

from __future__ import annotations

import trio
from support.client import manual_shop
from support.stripe_events import event_body, signed, stripe_credentials
from support.waits import bound

LIMIT = 1024 * 1024


async def test_a_signed_delivery_is_received_once(admin, http):
    shop = await manual_shop(admin)
    await admin.provider(shop.project_id, "stripe", {"enabled": True, "test": stripe_credentials()})
    body = event_body("evt_route_1", "charge.refunded", {"id": "ch_1", "object": "charge"})
    path = f"/webhook/stripe/{shop.project_id}"
    first = await http.post(path, content=body, headers=signed(body))
    assert first.status_code == 200, first.text
    assert first.headers["content-type"] == "application/json"
    assert first.headers["content-length"] == str(len(first.content))
    assert first.headers["cm-request-id"].startswith("req_")
    assert first.json()["received"] is True and first.json()["duplicate"] is False
    assert "connection" not in first.headers or first.headers["connection"] != "close"
    again = await http.post(path, content=body, headers=signed(body))
    assert again.json() == {**first.json(), "duplicate": True}
    forged = await http.post(path, content=body, headers=signed(body, "whsec_wrong"))
    assert forged.status_code == 401


async def test_bodies_over_1_mib_are_refused_before_any_body_byte_is_read(node, admin, http):
    shop = await manual_shop(admin)
    path = f"/webhook/stripe/{shop.project_id}"
    host, port = node.url.removeprefix("http://").split(":")
    stream = await trio.open_tcp_stream(host, int(port))
    # only the head: a node that waited for the body would never answer
    await stream.send_all(
        f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {LIMIT + 1}\r\n\r\n".encode()
    )
    answer = b""
    with trio.fail_after(bound(5)):
        while b"payload_too_large" not in answer:
            answer += await stream.receive_some(4096)
    assert answer.startswith(b"HTTP/1.1 413")
    await stream.aclose()
    # a body under the limit gets past it (and is then refused for what it is)
    fits = await http.post(
        path, content=b"x" * (64 * 1024), headers={"content-type": "application/json"}
    )
    assert fits.status_code == 404 and fits.json()["error"]["code"] == "provider_not_enabled"


async def test_a_streamed_body_is_cut_off_at_1_mib(node, admin, chunked):
    shop = await manual_shop(admin)
    answer = await chunked(node.url, f"/webhook/stripe/{shop.project_id}", b"a" * 65536, 20)
    assert answer.startswith(b"HTTP/1.1 413")


async def test_the_routes_refusals(admin, http, envelope):
    shop = await manual_shop(admin)
    path = f"/webhook/stripe/{shop.project_id}"
    got = await http.get(path)
    envelope(got, 405, "method_not_allowed")
    assert got.headers["allow"] == "OPTIONS, POST"
    options = await http.options(path)
    assert options.status_code == 200 and options.headers["allow"] == "OPTIONS, POST"
    envelope(await http.post(f"/webhook/venmo/{shop.project_id}"), 404, "unknown_provider")
    # refused before its body was read: the connection is not reused
    unread = await http.post(f"/webhook/venmo/{shop.project_id}", content=b"{}")
    assert unread.status_code == 404 and unread.headers["connection"] == "close"
    envelope(await http.post("/webhook/stripe/not-a-project"), 404, "project_not_found")
    envelope(await http.post("/webhook/stripe/prj_0000000000000000"), 404, "project_not_found")
    for odd in ("/webhook/", "/webhook/stripe", "/webhook/stripe/", f"{path}/more"):
        envelope(await http.post(odd), 404, "not_found")
    # no CORS: providers are servers
    assert (
        "access-control-allow-origin"
        not in (await http.post(path, headers={"Origin": "https://shop.example"})).headers
    )
