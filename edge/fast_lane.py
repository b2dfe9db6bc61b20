"""The fast lane (edge.serving): a plain request read whole in one read
(``edge.http.plain_request``) is handed to the ASGI app in the connection's own task, and its
answer written in one go, instead of through h11 and a task, queues and events per request.

What the app sees is what Hypercorn would give it (the same scope, the body in one message,
``http.disconnect`` once the answer is out), and what the client gets is what Hypercorn would
write (h11's status line, Hypercorn's ``date`` and ``server`` headers, ``connection: close``
after ``keep_alive_max_requests``); tests/test_fast_lane.py holds the two side by side.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import trio
from hypercorn.config import Config

from edge.http.asgi import WHOLE_BODY
from edge.http.plain_request import PlainRequest

log = logging.getLogger("edge.serving")

ASGI = {"spec_version": "2.1", "version": "3.0"}
_STATUS_LINES: dict[int, bytes] = {}


class Answer:
    """What the app sent: its status, headers and whole body."""

    __slots__ = ("status", "headers", "body", "started", "done", "broken")

    def __init__(self) -> None:
        self.status = 500
        self.headers: list[tuple[bytes, bytes]] = []
        self.body: list[bytes] = []
        self.started = False
        self.done = trio.Event()
        self.broken = False  # begun and never finished: what went out must end the connection

    async def send(self, message: Any) -> None:
        kind = message["type"]
        if kind == "http.response.start":
            self.started = True
            self.status = int(message["status"])
            self.headers = [(bytes(n).lower(), bytes(v)) for n, v in message.get("headers", ())]
        elif kind == "http.response.body":
            if not self.started or self.done.is_set():
                raise RuntimeError("a body sent outside an answer")
            body = message.get("body", b"")
            if body:
                self.body.append(bytes(body))
            if not message.get("more_body", False):
                self.done.set()
        # trailers and pushes are not offered on this lane; anything else is an app's error
        else:
            raise RuntimeError(f"unexpected ASGI message {kind!r}")


def scope_of(
    request: PlainRequest,
    client: tuple[str, int] | None,
    server: tuple[str, int] | None,
    config: Config,
    state: dict[str, Any],
) -> dict[str, Any]:
    """The scope Hypercorn's HTTPStream builds for the same request (no ``%`` in the path, so
    no decoding), and ``WHOLE_BODY``: the body is all here."""
    return {
        "type": "http",
        "http_version": "1.1",
        "asgi": ASGI,
        "method": request.method,
        "scheme": "http",
        "path": request.path.decode("ascii"),
        "raw_path": request.path,
        "query_string": request.query_string,
        "root_path": config.root_path,
        "headers": request.headers,
        "client": client,
        "server": server,
        "state": state.copy(),
        "extensions": {WHOLE_BODY: {}},
    }


async def run(
    app: Callable[[Any, Any, Any], Awaitable[None]],
    scope: dict[str, Any],
    body: bytes,
) -> Answer:
    """Run ``app`` on one request; the answer as it sent it (a 500 with no body when it
    failed before answering, as Hypercorn does; ``broken`` when it began one and never
    finished it)."""
    answer = Answer()
    given = False

    async def receive() -> dict[str, Any]:
        nonlocal given
        if not given:
            given = True
            return {"type": "http.request", "body": body, "more_body": False}
        await answer.done.wait()  # as Hypercorn: the client is "gone" once answered
        return {"type": "http.disconnect"}

    try:
        await app(scope, receive, answer.send)
    except trio.Cancelled:
        raise
    except Exception:
        # as Hypercorn: logged, and this connection alone pays for it, never the server
        log.exception("Error in ASGI Framework")
    if not answer.done.is_set():
        if answer.started:
            answer.broken = True  # its length may promise more than came: the connection ends
        else:
            answer.status = 500
            answer.headers = [(b"content-length", b"0"), (b"connection", b"close")]
            answer.started = True
        answer.done.set()
    return answer


def encode(answer: Answer, extra: list[tuple[bytes, bytes]], head: bool) -> bytes:
    """The answer as h11 writes it: ``HTTP/1.1 <code> \\r\\n`` (no reason phrase), the
    headers as given, then the body (none for HEAD). A body without a length gets one (h11
    would have chunked it; the whole body is here)."""
    line = _STATUS_LINES.get(answer.status)
    if line is None:
        line = _STATUS_LINES[answer.status] = b"HTTP/1.1 %d \r\n" % answer.status
    body = b"".join(answer.body)
    parts = [line]
    has_length = False
    for name, value in answer.headers:
        if name == b"content-length":
            has_length = True
        parts += (name, b": ", value, b"\r\n")
    if not has_length and not head and not answer.broken:
        parts += (b"content-length: ", str(len(body)).encode(), b"\r\n")
    for name, value in extra:
        parts += (name, b": ", value, b"\r\n")
    parts.append(b"\r\n")
    if not head:
        parts.append(body)
    return b"".join(parts)


def closes(answer: Answer) -> bool:
    """The connection ends after ``answer``: the app asked for it, or left the answer unended."""
    if answer.broken:
        return True
    for name, value in answer.headers:
        if name == b"connection" and b"close" in value.lower():
            return True
    return False
