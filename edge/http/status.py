"""``GET /status/{projectId}/{id}``: the server-side source of truth for a payment or
subscription (CONTRACT 3), served directly on ASGI in front of the Quart app.

Why not a Quart route: merchant backends poll this endpoint more than all others together, and
the answer itself (auth, rate bucket, the actor's cached JSON) costs a fraction of what Quart's
request context, routing and hooks add per request. Everything else about it is the node's
usual behaviour, shared with the Quart side: the same auth, rate charging, actor call, error
envelope, request id, version pin, CORS for browsers. Unknown, malformed and other projects' ids
all answer the same 404.
"""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import parse_qs

import trio

from edge.actors.context import NodeContext
from edge.actors.messages import Answer, GetStatus
from edge.domain import ids
from edge.errors import ContractError, Internal, InvalidRequest, MethodNotAllowed, NotFound
from edge.http.auth import caller_for
from edge.http.clients import charge_of, client_ip_of
from edge.http.cors import EXPOSED_HEADERS, MAX_AGE, REQUEST_HEADERS
from edge.http.errors import status_of
from edge.http.jsonio import API_VERSION, JSON_TYPE, check_version, dumps
from edge.http.request_ids import new_request_id

log = logging.getLogger("edge.http")

PREFIX = "/status/"
MAX_WAIT_S = 30
ALLOW = "GET, HEAD, OPTIONS"

ASGIApp = Any


class StatusEndpoint:
    """An ASGI app: status requests here, everything else to ``app``."""

    def __init__(self, app: ASGIApp, ctx: NodeContext) -> None:
        self.app = app
        self.ctx = ctx

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or not scope["path"].startswith(PREFIX):
            await self.app(scope, receive, send)
            return
        headers: dict[str, str] = {}
        for name, value in scope["headers"]:  # the first of repeated lines, as Werkzeug reads them
            headers.setdefault(name.decode("latin-1").lower(), value.decode("latin-1"))
        request_id = new_request_id()
        out = [
            (b"cm-request-id", request_id.encode()),
            (b"cm-version", API_VERSION.encode()),
            (b"x-content-type-options", b"nosniff"),
        ]
        method = scope["method"]
        try:
            status, body, extra = await self._answer(scope, receive, method, headers)
        except ContractError as failure:
            if isinstance(
                failure, Internal
            ):  # an actor crashed: the request id is what gets quoted
                failure.extra.setdefault("requestId", request_id)
            status, body, extra = status_of(failure), dumps(failure.body()), failure.headers
        except _Disconnected:
            return  # nobody to answer
        except Exception as exc:
            log.error(
                "unexpected fault in %s %s (request %s)",
                method,
                scope["path"],
                request_id,
                exc_info=exc,
            )
            failure = Internal(
                "internal",
                "An unexpected fault; it has been logged. Quote the request id when reporting it.",
                extra={"requestId": request_id},
            )
            status, body, extra = 500, dumps(failure.body()), {}
        out += [(name.lower().encode(), value.encode()) for name, value in extra.items()]
        if "origin" in headers:
            out += [
                (b"access-control-allow-origin", b"*"),
                (b"access-control-expose-headers", EXPOSED_HEADERS.encode()),
            ]
        if body:
            out.append((b"content-type", JSON_TYPE.encode()))
        out.append((b"content-length", str(len(body)).encode()))  # HEAD: the length GET would send
        await send({"type": "http.response.start", "status": status, "headers": out})
        await send({"type": "http.response.body", "body": b"" if method == "HEAD" else body})

    async def _answer(
        self, scope: dict[str, Any], receive: Any, method: str, headers: dict[str, str]
    ) -> tuple[int, bytes, dict[str, str]]:
        if method == "OPTIONS":
            preflight = {"Allow": ALLOW}
            if "access-control-request-method" in headers:
                preflight.update(
                    {
                        "Access-Control-Allow-Methods": ALLOW,
                        "Access-Control-Allow-Headers": REQUEST_HEADERS,
                        "Access-Control-Max-Age": MAX_AGE,
                    }
                )
            return 200, b"", preflight
        if method not in ("GET", "HEAD"):
            raise MethodNotAllowed(
                "method_not_allowed",
                "This endpoint does not take that method.",
                headers={"Allow": ALLOW},
            )
        check_version(headers.get("cm-version"))
        parts = scope["path"][len(PREFIX) :].split("/")
        if len(parts) != 2:
            raise _not_found()
        project_id, item_id = parts
        if not ids.is_project_id(project_id) or not (
            ids.is_tx_id(item_id) or ids.is_sub_id(item_id)
        ):
            raise _not_found()
        caller = caller_for(self.ctx, project_id, headers.get("authorization"), required=False)
        wait_s, version = _long_poll(scope["query_string"])
        peer = (scope.get("client") or ("", 0))[0]
        charge = charge_of(
            "status",
            caller,
            lambda: client_ip_of(self.ctx.settings, peer, headers.get("x-forwarded-for")),
        )
        registry = self.ctx.registry
        assert registry is not None
        message = GetStatus(item_id, wait_s, version, charge)
        try:
            if wait_s:
                answer = await _unless_disconnected(
                    receive, registry.call(project_id, message, wait_s + 10)
                )
            else:
                answer = await registry.call(project_id, message)
        except ContractError as failure:
            if failure.code == "project_not_found":
                raise _not_found() from None
            raise
        if isinstance(answer, Answer):
            return 200, answer.value, answer.headers
        return 200, answer, {}


class _Disconnected(Exception):
    pass


async def _unless_disconnected(receive: Any, call: Any) -> Any:
    """A long poll ends when its client goes away, rather than holding on to its timer."""
    result: list[Any] = []

    async def answer() -> None:
        try:
            result.append(await call)
        except (
            ContractError
        ) as failure:  # kept out of the nursery: it would arrive as an ExceptionGroup
            result.append(failure)
        nursery.cancel_scope.cancel()

    async def watch() -> None:
        while (await receive())["type"] != "http.disconnect":
            pass
        nursery.cancel_scope.cancel()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(answer)
        nursery.start_soon(watch)
    if not result:
        raise _Disconnected()
    if isinstance(result[0], ContractError):
        raise result[0]
    return result[0]


def _not_found() -> ContractError:
    # a new one per answer: a raised exception keeps its traceback, and so everything it saw
    return NotFound("not_found", "No transaction or subscription with this id.")


def _long_poll(query: bytes) -> tuple[int, int | None]:
    """``?wait=N&version=V``; most polls carry no query at all."""
    if not query:
        return 0, None
    args = parse_qs(query.decode("latin-1"), keep_blank_values=True)
    return _bounded(args, "wait", 0, MAX_WAIT_S) or 0, _bounded(args, "version", 0, 2**31)


def _bounded(args: dict[str, list[str]], name: str, low: int, high: int) -> int | None:
    values = args.get(name)
    if not values:
        return None
    raw = values[0]
    if not (raw.isascii() and raw.isdigit()) or not low <= int(raw) <= high:
        raise InvalidRequest(
            "invalid_request", f"{name} must be an integer from {low} to {high}", field=name
        )
    return int(raw)
