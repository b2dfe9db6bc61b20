"""``GET /status/{projectId}/{id}``: the server-side source of truth for a payment or
subscription (CONTRACT 3), served directly on ASGI beside the Quart app.

Why not a Quart route: merchant backends poll this endpoint more than all others together, and
the answer itself (auth, rate bucket, the actor's cached JSON) costs a fraction of what Quart's
request context and routing add per request. Everything else about it is the node's usual
behaviour: the same auth, rate charging and actor call as the Quart side, and the middleware's
error envelope, request id, version pin and CORS for browsers. Unknown, malformed and other
projects' ids all answer the same 404.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs

import trio

from edge.actors.context import NodeContext
from edge.actors.messages import Answer, GetStatus
from edge.domain import ids
from edge.domain.inputs import bounded_int
from edge.errors import ContractError, InvalidRequest, NotFound
from edge.http.asgi import Disconnected, Receive, Scope, Send, answer, encode
from edge.http.auth import caller_for
from edge.http.clients import charge_of, client_ip_of
from edge.http.errors import method_not_allowed

PREFIX = "/status/"
# what the router sends here, as the API reference names it (edge.http.app.served_routes)
ROUTES = (("GET", "/status/{projectId}/{id}"),)
MAX_WAIT_S = 30
ALLOW = "GET, HEAD, OPTIONS"
_ALLOW = ((b"allow", ALLOW.encode()),)


class StatusRoute:
    """The raw ASGI route for paths under ``/status/`` (edge.http.middleware in front)."""

    def __init__(self, ctx: NodeContext) -> None:
        self.ctx = ctx

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        method = scope["method"]
        if method == "OPTIONS":  # the middleware adds a preflight's CORS from Allow
            await answer(send, 200, b"", _ALLOW)
            return
        if method != "GET" and method != "HEAD":
            raise method_not_allowed(ALLOW)
        parts = scope["path"][len(PREFIX) :].split("/")
        if len(parts) != 2:
            raise _not_found()
        project_id, item_id = parts
        if not ids.is_project_id(project_id) or not (
            ids.is_tx_id(item_id) or ids.is_sub_id(item_id)
        ):
            raise _not_found()
        authorization = forwarded_for = None
        for name, value in scope["headers"]:  # the first of repeated lines, as Werkzeug reads
            if name == b"authorization":
                authorization = authorization or value.decode("latin-1")
            elif name == b"x-forwarded-for":
                forwarded_for = forwarded_for or value.decode("latin-1")
        caller = await caller_for(self.ctx, project_id, authorization, required=False)
        wait_s, version = _long_poll(scope["query_string"])
        peer = (scope.get("client") or ("", 0))[0]
        charge = charge_of(
            "status", caller, lambda: client_ip_of(self.ctx.settings, peer, forwarded_for)
        )
        registry = self.ctx.registry
        message = GetStatus(item_id, wait_s, version, charge)
        try:
            if wait_s:
                reply = await _unless_disconnected(
                    receive, registry.call(project_id, message, wait_s + 10)
                )
            else:
                reply = await registry.call(project_id, message)
        except ContractError as failure:
            if failure.code == "project_not_found":
                raise _not_found() from None
            raise
        if isinstance(reply, Answer):
            await answer(send, 200, reply.value, encode(reply.headers), head=method == "HEAD")
        else:
            await answer(send, 200, reply, head=method == "HEAD")


async def _unless_disconnected(receive: Receive, call: Any) -> Any:
    """A long poll ends when its client goes away, rather than holding on to its timer."""
    result: list[Any] = []

    async def ask() -> None:
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
        nursery.start_soon(ask)
        nursery.start_soon(watch)
    if not result:
        raise Disconnected()
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
    value = bounded_int(values[0], low, high)
    if value is None:
        raise InvalidRequest(
            "invalid_request", f"{name} must be an integer from {low} to {high}", field=name
        )
    return value
