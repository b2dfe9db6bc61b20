"""CONTRACT 7: every error is the JSON envelope with the right status, every answer has
Cm-Request-Id and Cm-Version, and an unexpected fault is 500 internal without a trace."""

from __future__ import annotations

import trio
from support.client import bearer, manual_shop

from edge.store import keys


def _error(response, status: int, code: str) -> dict:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    assert response.headers["cm-request-id"].startswith("req_")
    assert response.headers["cm-version"] == "2026-11-21"
    error = response.json()["error"]
    assert error["code"] == code
    assert isinstance(error["message"], str) and error["message"]
    assert isinstance(error["retryable"], bool)
    return error


async def test_framework_errors_use_the_envelope(http, admin):
    shop = await manual_shop(admin)
    _error(await http.get("/no/such/path"), 404, "not_found")
    error = _error(
        await http.delete(f"/api/checkout/manual/{shop.project_id}"), 405, "method_not_allowed"
    )
    assert error
    _error(
        await http.post(
            f"/api/checkout/manual/{shop.project_id}",
            content=b"{}",
            headers={"content-type": "text/plain"},
        ),
        415,
        "unsupported_media_type",
    )
    big = b'{"productId": "book", "metadata": {"x": "' + b"a" * 20_000 + b'"}}'
    _error(
        await http.post(
            f"/api/checkout/manual/{shop.project_id}",
            content=big,
            headers={"content-type": "application/json"},
        ),
        413,
        "payload_too_large",
    )


async def test_unknown_version_is_refused(http):
    _error(
        await http.get(
            "/status/prj_aaaaaaaaaaaaaaaa/tx_01M7YS2H2CXEBWK64PPXXP5WHD",
            headers={"Cm-Version": "2020-01-01"},
        ),
        400,
        "unknown_version",
    )


async def test_an_unexpected_fault_is_500_internal_and_the_actor_recovers(node, http, admin):
    shop = await manual_shop(admin)
    other = await manual_shop(admin)
    pid = shop.project_id
    tx = (await http.post(f"/api/checkout/manual/{pid}", json={"productId": "book"})).json()["txId"]
    healthy = (await http.post(f"/api/checkout/manual/{pid}", json={"productId": "book"})).json()[
        "txId"
    ]
    other_tx = (
        await http.post(f"/api/checkout/manual/{other.project_id}", json={"productId": "book"})
    ).json()["txId"]
    # Corrupt one stored record behind the actor's back, and restart the actor so it reads it.
    await node.ctx.writer.write(
        [("records", keys.record(pid, keys.TRANSACTION, tx), b"\xc1garbage")]
    )
    del node.ctx.registry._entries[pid]  # evicted: the next call loads the actor from the store
    response = await http.post(
        f"/api/projects/{pid}/transactions/{tx}/mark-paid", headers=bearer(shop.live_key)
    )
    error = _error(response, 500, "internal")
    assert error["requestId"] == response.headers["cm-request-id"]
    assert "Traceback" not in response.text and "garbage" not in response.text
    # the project's actor was rebuilt and serves its other transactions; other projects unaffected
    assert (await http.get(f"/status/{pid}/{healthy}")).json()["status"] == "pending"
    assert (await http.get(f"/status/{other.project_id}/{other_tx}")).json()["status"] == "pending"
    assert node.ctx.registry.restarts >= 1


async def test_only_browser_endpoints_answer_cross_origin(admin, http):
    shop = await manual_shop(admin)
    merchant = await http.get(
        f"/api/projects/{shop.project_id}/transactions", headers=bearer(shop.live_key)
    )
    assert merchant.status_code == 200 and "access-control-allow-origin" not in merchant.headers
    path = f"/status/{shop.project_id}/tx_01M7YS2H2CXEBWK64PPXXP5WHD"
    from_a_page = await http.get(path, headers={"Origin": "https://shop.example"})
    assert (
        from_a_page.status_code == 404 and from_a_page.headers["access-control-allow-origin"] == "*"
    )
    assert "Cm-Signature" in from_a_page.headers["access-control-expose-headers"]
    from_a_server = await http.get(path)  # a backend poll carries no CORS headers
    assert "access-control-allow-origin" not in from_a_server.headers
    # public-info always does: shared caches keep it and hand it to browsers later
    info = await http.get(f"/api/projects/{shop.project_id}/public-info")
    assert info.headers["access-control-allow-origin"] == "*"


async def test_webhook_bodies_are_refused_over_1_mib_before_any_body_byte_is_read(
    node, admin, http
):
    shop = await manual_shop(admin)
    path = f"/webhook/stripe/{shop.project_id}"
    host, port = node.url.removeprefix("http://").split(":")
    stream = await trio.open_tcp_stream(host, int(port))
    # only the head: a node that waited for the body would never answer
    await stream.send_all(
        f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {1024 * 1024 + 1}\r\n\r\n".encode()
    )
    answer = b""
    with trio.fail_after(5):
        while b"payload_too_large" not in answer:
            answer += await stream.receive_some(4096)
    assert answer.startswith(b"HTTP/1.1 413")
    await stream.aclose()
    # a body under the limit gets past it (and is then refused for what it is)
    fits = await http.post(
        path, content=b"x" * (64 * 1024), headers={"content-type": "application/json"}
    )
    assert fits.status_code == 404 and fits.json()["error"]["code"] == "provider_not_enabled"


async def test_a_streamed_body_is_cut_off_at_the_limit(admin, http):
    shop = await manual_shop(admin)

    class Chunks:
        """A streamed body with no Content-Length: the node counts as it reads. (A class, not an
        async generator: the node stops reading early, and an unfinished generator warns.)"""

        def __init__(self) -> None:
            self.left = 40

        def __aiter__(self):
            return self

        async def __anext__(self) -> bytes:
            if not self.left:
                raise StopAsyncIteration
            self.left -= 1
            return b"a" * 1024

    response = await http.post(
        f"/api/checkout/manual/{shop.project_id}",
        content=Chunks(),
        headers={"content-type": "application/json"},
    )
    _error(response, 413, "payload_too_large")


async def test_status_answers_head_options_and_other_methods(admin, http):
    shop = await manual_shop(admin)
    tx = (
        await http.post(f"/api/checkout/manual/{shop.project_id}", json={"productId": "book"})
    ).json()["txId"]
    path = f"/status/{shop.project_id}/{tx}"
    get = await http.get(path)
    head = await http.head(path)
    assert head.status_code == 200 and head.content == b""
    assert head.headers["content-length"] == str(len(get.content))
    options = await http.options(
        path, headers={"Origin": "https://shop.example", "Access-Control-Request-Method": "GET"}
    )
    assert options.status_code == 200 and options.headers["content-length"] == "0"
    assert options.headers["access-control-allow-origin"] == "*"
    assert "GET" in options.headers["access-control-allow-methods"]
    post = await http.post(path)
    error = _error(post, 405, "method_not_allowed")
    assert error and "GET" in post.headers["allow"]
