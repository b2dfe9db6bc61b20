"""What the raw ASGI side shares: the types, reading a bounded body, and sending an answer.

Used by edge.http.middleware and the fast routes (edge.http.status, edge.http.webhooks), which
answer without Quart. Header names in an ASGI scope are lower case bytes.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, MutableMapping
from typing import Any

from edge.http.errors import payload_too_large
from edge.http.jsonio import JSON_TYPE

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
Headers = list[tuple[bytes, bytes]]

JSON = (b"content-type", JSON_TYPE.encode())
# The scope extension of a request whose body the server read whole before calling the app
# (edge.fast_lane): no pace to watch, no unread rest to close the connection over.
WHOLE_BODY = "edge.whole_body"


class Disconnected(Exception):
    """The client went away before its answer: there is nobody to answer."""


_NAMES: dict[str, bytes] = {}  # the node's own header names: a few dozen
_MAX_NAMES = 256


def encode(headers: Mapping[str, str]) -> Headers:
    """``{Name: value}`` as ASGI wants it; each name is lowered and encoded once per process."""
    out = []
    for name, value in headers.items():
        raw = _NAMES.get(name)
        if raw is None:
            raw = name.lower().encode()
            if len(_NAMES) < _MAX_NAMES:
                _NAMES[name] = raw
        out.append((raw, value.encode()))
    return out


async def answer(
    send: Send,
    status: int,
    body: bytes,
    headers: Iterable[tuple[bytes, bytes]] = (),
    *,
    head: bool = False,
    content_type: tuple[bytes, bytes] = JSON,
) -> None:
    """A whole answer: a body (JSON unless ``content_type`` says otherwise) with its
    Content-Length; ``head``: the length GET would send, no body."""
    out = list(headers)
    if body:
        out.append(content_type)
    out.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": status, "headers": out})
    await send({"type": "http.response.body", "body": b"" if head else body})


async def read_body(receive: Receive, declared: str | None, limit: int) -> bytes:
    """The request body, refused with ``413`` at once when its declared Content-Length is over
    ``limit``, or as soon as a streamed body passes it."""
    if declared is not None and not (
        declared.isascii() and declared.isdigit() and int(declared) <= limit
    ):
        raise payload_too_large()
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise Disconnected()
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise payload_too_large()
        if not message.get("more_body", False):
            if not chunks:
                return chunk  # the usual case: one message
            chunks.append(chunk)
            return b"".join(chunks)
        chunks.append(chunk)
