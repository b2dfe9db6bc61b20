"""edge.http.middleware on its own, around small ASGI apps: the headers it adds, the version
pin, the error envelope and the 500 log. (Through a real node: test_errors, test_status.)"""

from __future__ import annotations

import json
import logging
from typing import Any

import trio

from edge.errors import Conflict, Internal, RateLimited
from edge.http.asgi import Disconnected, answer
from edge.http.middleware import ANSWER_HEADERS, HTML_CSP, Middleware

Sent = list[dict[str, Any]]


async def call(
    app: Any,
    method: str = "GET",
    path: str = "/x",
    headers: dict[str, str] | None = None,
    body: bytes = b"",
) -> tuple[int | None, dict[str, str], bytes, Sent]:
    """One request through ``Middleware(app)``: its status, headers, body and raw messages."""
    scope = {
        "type": "http",
        "method": method,
        "path": path,
        "query_string": b"",
        "headers": [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()],
        "client": ("127.0.0.1", 1234),
    }
    sent: Sent = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await Middleware(app)(scope, receive, send)
    if not sent:
        return None, {}, b"", sent
    start = sent[0]
    out: dict[str, str] = {}
    for name, value in start["headers"]:
        assert name.decode() not in out, f"{name!r} twice"
        out[name.decode()] = value.decode()
    return start["status"], out, b"".join(m.get("body", b"") for m in sent[1:]), sent


def responding(
    status: int = 200, body: bytes = b'{"ok":true}', content_type: bytes = b"application/json"
) -> Any:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", content_type),
                    (b"content-length", str(len(body)).encode()),
                    (b"allow", b"GET, OPTIONS"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})

    return app


def raising(exc: BaseException) -> Any:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        raise exc

    return app


async def test_every_answer_gets_the_request_id_the_version_and_nosniff():
    status, headers, body, _ = await call(responding())
    assert status == 200 and body == b'{"ok":true}'
    assert headers["cm-request-id"].startswith("req_")
    assert headers["cm-version"] == "2026-11-21"
    assert headers["x-content-type-options"] == "nosniff"
    assert "content-security-policy" not in headers
    _, again, _, _ = await call(responding())
    assert again["cm-request-id"] != headers["cm-request-id"]


async def test_html_answers_get_the_csp():
    _, headers, _, _ = await call(responding(content_type=b"text/html; charset=utf-8"))
    assert headers["content-security-policy"] == HTML_CSP


async def test_an_unknown_version_is_refused_before_the_app_runs():
    ran = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        ran.append(scope)

    status, headers, body, _ = await call(app, headers={"Cm-Version": "2020-01-01"})
    assert status == 400 and not ran
    assert json.loads(body)["error"]["code"] == "unknown_version"
    assert headers["cm-version"] == "2026-11-21"
    status, _, _, _ = await call(responding(), headers={"Cm-Version": "2026-11-21"})
    assert status == 200


async def test_cors_only_for_browser_paths_and_public_info():
    origin = {"Origin": "https://shop.example"}
    _, page, _, _ = await call(responding(), path="/status/p/t", headers=origin)
    assert page["access-control-allow-origin"] == "*"
    assert "Cm-Signature" in page["access-control-expose-headers"]
    _, server, _, _ = await call(responding(), path="/status/p/t")
    assert "access-control-allow-origin" not in server
    _, merchant, _, _ = await call(
        responding(), path="/api/projects/p/transactions", headers=origin
    )
    assert "access-control-allow-origin" not in merchant
    _, cached, _, _ = await call(responding(), path="/api/projects/p/public-info")
    assert cached["access-control-allow-origin"] == "*"


async def test_a_preflight_allows_the_routes_methods():
    _, headers, _, _ = await call(
        responding(body=b""),
        method="OPTIONS",
        path="/api/checkout/manual/p",
        headers={"Origin": "https://shop.example", "Access-Control-Request-Method": "POST"},
    )
    assert headers["access-control-allow-methods"] == "GET, OPTIONS"  # the answer's Allow
    assert "Idempotency-Key" in headers["access-control-allow-headers"]
    assert headers["access-control-max-age"] == "600"


async def test_headers_a_handler_adds_go_out_with_the_answer():
    async def app(scope: Any, receive: Any, send: Any) -> None:
        scope[ANSWER_HEADERS] = {"RateLimit-Limit": "60"}
        await answer(send, 200, b"{}")

    _, headers, _, _ = await call(app)
    assert headers["ratelimit-limit"] == "60" and headers["content-length"] == "2"


async def test_a_refusal_s_rate_headers_replace_those_of_a_bucket_taken_before():
    """A route charged one bucket (its headers noted), then another refused the request: the
    429 says the refusing bucket's figures, once each (``call`` fails on a header twice)."""

    async def app(scope: Any, receive: Any, send: Any) -> None:
        scope[ANSWER_HEADERS] = {"RateLimit-Limit": "300", "RateLimit-Remaining": "291"}
        headers = {"RateLimit-Limit": "10", "RateLimit-Remaining": "0", "Retry-After": "6"}
        raise RateLimited("rate_limited", "Too many tries.", retryable=True, headers=headers)

    status, headers, _, _ = await call(app)
    assert status == 429
    assert (headers["ratelimit-limit"], headers["ratelimit-remaining"]) == ("10", "0")


async def test_an_answer_before_the_body_was_read_closes_the_connection():
    async def reads(scope: Any, receive: Any, send: Any) -> None:
        await receive()
        await answer(send, 200, b"{}")

    with_body = {"Content-Length": "2"}
    _, unread, _, _ = await call(responding(), method="POST", headers=with_body, body=b"{}")
    assert unread["connection"] == "close"
    _, read, _, _ = await call(reads, method="POST", headers=with_body, body=b"{}")
    assert "connection" not in read
    _, bodiless, _, _ = await call(responding())
    assert "connection" not in bodiless


async def test_a_contract_error_is_its_envelope_with_its_headers():
    error = RateLimited("rate_limited", "Slow down.", retryable=True, headers={"Retry-After": "3"})
    status, headers, body, _ = await call(raising(error))
    assert status == 429 and headers["retry-after"] == "3"
    assert headers["content-type"] == "application/json"
    assert headers["content-length"] == str(len(body))
    assert json.loads(body) == {
        "error": {"code": "rate_limited", "message": "Slow down.", "retryable": True}
    }


async def test_a_contract_error_inside_a_nursery_group_is_still_its_envelope():
    status, _, body, _ = await call(raising(ExceptionGroup("x", [Conflict("tx_exists", "Taken.")])))
    assert status == 409 and json.loads(body)["error"]["code"] == "tx_exists"


async def test_head_gets_the_envelopes_length_without_the_body():
    status, headers, body, _ = await call(raising(Conflict("tx_exists", "Taken.")), method="HEAD")
    assert status == 409 and body == b"" and int(headers["content-length"]) > 0


async def test_an_actor_fault_is_quoted_by_request_id():
    status, headers, body, _ = await call(raising(Internal("internal", "The actor failed.")))
    assert status == 500
    assert json.loads(body)["error"]["requestId"] == headers["cm-request-id"]


async def test_an_unexpected_fault_is_500_internal_logged_once_with_its_traceback(caplog):
    caplog.set_level(logging.ERROR)
    status, headers, body, _ = await call(raising(KeyError("secret-detail")), path="/boom")
    assert status == 500
    error = json.loads(body)["error"]
    assert error["code"] == "internal" and error["requestId"] == headers["cm-request-id"]
    assert b"secret-detail" not in body and b"Traceback" not in body
    (record,) = caplog.records
    assert record.exc_info is not None and record.exc_info[0] is KeyError
    assert "GET /boom" in record.getMessage() and headers["cm-request-id"] in record.getMessage()


async def test_a_fault_after_the_answer_started_is_logged_and_nothing_more_sent(caplog):
    caplog.set_level(logging.ERROR)

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        raise RuntimeError("mid-answer")

    status, _, _, sent = await call(app)
    assert status == 200 and len(sent) == 1
    assert len(caplog.records) == 1


async def test_a_client_that_left_gets_no_answer():
    status, _, _, sent = await call(raising(Disconnected()))
    assert status is None and sent == []


async def test_cancellation_is_not_a_fault():
    async def app(scope: Any, receive: Any, send: Any) -> None:
        await trio.sleep_forever()

    with trio.move_on_after(0.01) as cancel_scope:
        await call(app)
    assert cancel_scope.cancelled_caught  # passed on, not answered as a 500


async def test_the_lifespan_passes_through():
    seen = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        seen.append(scope["type"])

    async def nothing() -> dict[str, Any]:
        return {}

    async def ignore(message: Any) -> None:
        pass

    await Middleware(app)({"type": "lifespan"}, nothing, ignore)
    assert seen == ["lifespan"]


async def test_a_slow_handler_after_the_body_is_not_cut_as_a_slow_body(autojump_clock):
    # found by schemathesis under load: Quart keeps a receive() waiting for the client's
    # disconnect once the body is read; a handler slower than the body's pace got 408
    body = b'{"x": 1}'
    messages = [{"type": "http.request", "body": body, "more_body": False}]

    async def receive() -> dict[str, Any]:
        if messages:
            return messages.pop()
        await trio.sleep_forever()  # the client stays connected
        raise AssertionError

    async def app(scope: Any, receive: Any, send: Any) -> None:
        async with trio.open_nursery() as nursery:
            assert (await receive())["body"] == body

            async def wait_for_disconnect() -> None:
                await receive()

            nursery.start_soon(wait_for_disconnect)
            await trio.sleep(30)  # mock time, the subject: slow work long past the body's grace
            await answer(send, 200, b"{}")
            nursery.cancel_scope.cancel()

    sent: Sent = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/x",
        "query_string": b"",
        "headers": [(b"content-length", str(len(body)).encode())],
        "client": ("127.0.0.1", 1234),
    }
    await Middleware(app)(scope, receive, send)
    assert sent[0]["status"] == 200
