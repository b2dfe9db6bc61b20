"""The dashboard's calls to the node's own API, made as the signed-in account (its session
cookie and CSRF token): the dashboard can do nothing the API cannot, and every rule the API
keeps (ownership, validation, limits) holds for it too."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import httpx

from edge.actors.context import NodeContext
from edge.http.sessions import COOKIE, CSRF_HEADER


class ApiRefused(Exception):
    """The API's contract error: shown next to the field it names."""

    def __init__(self, status: int, error: Mapping[str, Any]) -> None:
        super().__init__(error.get("message", ""))
        self.status = status
        self.code = str(error.get("code", "error"))
        self.message = str(error.get("message", ""))
        self.field = error.get("field")


class Api:
    def __init__(self, client: httpx.AsyncClient) -> None:
        self._client = client

    async def get(self, path: str, params: Mapping[str, str] | None = None) -> Any:
        return await self.send("GET", path, params=params)

    async def send(
        self,
        method: str,
        path: str,
        body: Any = None,
        params: Mapping[str, str] | None = None,
    ) -> Any:
        payload, _ = await self.send_for_cookies(method, path, body, params)
        return payload

    async def send_for_cookies(
        self,
        method: str,
        path: str,
        body: Any = None,
        params: Mapping[str, str] | None = None,
    ) -> tuple[Any, httpx.Cookies]:
        """The answer, and the cookies it set (a new session, for the browser)."""
        response = await self._client.request(method, path, json=body, params=params)
        payload = response.json()
        if response.status_code >= 400:
            raise ApiRefused(response.status_code, payload.get("error", {}))
        return payload, response.cookies


@asynccontextmanager
async def api_for(ctx: NodeContext, session_token: str, csrf: str) -> AsyncIterator[Api]:
    """An API client that calls this node over loopback as the session's account."""
    async with httpx.AsyncClient(
        base_url=ctx.bound_url,
        cookies={COOKIE: session_token},
        headers={CSRF_HEADER: csrf},
        timeout=30.0,
        trust_env=False,  # the node's own address: never through a proxy
    ) as client:
        yield Api(client)
