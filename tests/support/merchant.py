"""The merchant's server for notification tests: an ASGI app that keeps every notification it
gets, and the call that registers it as an endpoint (CONTRACT 4.8)."""

from __future__ import annotations

import json
from typing import Any

import trio

from support.asgi import serve_asgi
from support.waits import bound


class Merchant:
    """The merchant's server: keeps every notification; answers ``status``."""

    def __init__(self) -> None:
        self.got: list[tuple[dict[str, str], bytes]] = []
        self.status = 200
        self.arrived = trio.Event()

    async def __call__(self, scope: dict[str, Any], body: bytes) -> tuple[int, bytes]:
        self.got.append(({k.decode(): v.decode() for k, v in scope["headers"]}, body))
        self.arrived.set()
        return self.status, b""

    async def wait_for(self, count: int) -> None:
        with trio.fail_after(bound(20)):
            while len(self.got) < count:
                self.arrived = trio.Event()
                await self.arrived.wait()

    def events(self) -> list[dict[str, Any]]:
        return [json.loads(body) for _, body in self.got]


async def add_endpoint(admin: Any, project_id: str, **body: Any) -> dict[str, Any]:
    answer: dict[str, Any] = await admin.ok(
        "POST", f"/api/manage/projects/{project_id}/endpoints", body, 201
    )
    return answer


async def listening(
    nursery: trio.Nursery, merchant: Any, admin: Any, project_id: str, **body: Any
) -> dict[str, Any]:
    """``merchant`` served on loopback from ``nursery`` and registered as one of the project's
    endpoints (``body``: its other fields), under ``localhost`` as a merchant would name it."""
    base = await nursery.start(serve_asgi, merchant)
    url = base.replace("127.0.0.1", "localhost") + "/hooks"
    return await add_endpoint(admin, project_id, url=url, **body)
