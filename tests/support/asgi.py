"""A bare ASGI endpoint on loopback for tests that stand in for someone else's server (a
certificate host, a merchant's webhook endpoint): ``url = await nursery.start(serve_asgi,
handler)``, where ``handler(scope, body)`` answers ``(status, body)``, or ``(status, body,
headers)``."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import trio
from hypercorn.config import Config
from hypercorn.trio import serve

Answer = tuple[int, bytes] | tuple[int, bytes, list[tuple[bytes, bytes]]]
Handler = Callable[[dict[str, Any], bytes], Awaitable[Answer]]


def asgi(handler: Handler) -> Callable[..., Awaitable[None]]:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                await send({"type": message["type"] + ".complete"})
                if message["type"] == "lifespan.shutdown":
                    return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        answer = await handler(scope, body)
        headers = answer[2] if len(answer) == 3 else []
        await send({"type": "http.response.start", "status": answer[0], "headers": headers})
        await send({"type": "http.response.body", "body": answer[1]})

    return app


async def serve_asgi(
    handler: Handler, *, task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED
) -> None:
    """Serve ``handler`` on loopback until cancelled; reports its base URL."""
    config = Config()
    config.bind = ["127.0.0.1:0"]
    config.errorlog = None
    config.accesslog = None
    async with trio.open_nursery() as nursery:
        binds = await nursery.start(serve, asgi(handler), config)
        task_status.started(binds[0])


@asynccontextmanager
async def serving(handler: Handler) -> AsyncIterator[str]:
    """``handler`` served on loopback for the block (its value: the base URL)."""
    async with trio.open_nursery() as nursery:
        yield await nursery.start(serve_asgi, handler)
        nursery.cancel_scope.cancel()
