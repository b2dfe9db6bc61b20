"""A bare ASGI endpoint on loopback for tests that stand in for someone else's server (a
certificate host, a merchant's webhook endpoint): ``url = await nursery.start(serve_asgi,
handler)``, where ``handler(scope, body)`` answers ``(status, body)``."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import trio
from hypercorn.config import Config
from hypercorn.trio import serve

Handler = Callable[[dict[str, Any], bytes], Awaitable[tuple[int, bytes]]]


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
        status, answer = await handler(scope, body)
        await send({"type": "http.response.start", "status": status, "headers": []})
        await send({"type": "http.response.body", "body": answer})

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
