"""The running node, as seen from a request handler."""

from __future__ import annotations

import math
from typing import Any, cast

from quart import current_app, request

from edge.actors.context import NodeContext
from edge.actors.messages import Answer
from edge.http.middleware import ANSWER_HEADERS


def node() -> NodeContext:
    return cast(Any, current_app).edge


async def ask(project_id: str, message: Any) -> Any:
    """The actor's reply; headers it sends along (RateLimit-*) go out with the response."""
    registry = node().registry
    result = await registry.call(project_id, message)
    if isinstance(result, Answer):
        answer_headers(result.headers)
        return result.value
    return result


def answer_headers(headers: dict[str, str]) -> None:
    """Headers the answer to this request carries, whatever route makes it (the middleware
    adds them). Of two rate buckets charged (a login's by address and by e-mail), the answer
    tells the one with fewer requests left (CONTRACT 8: every limited answer)."""
    scope = cast(Any, request.scope)
    known: dict[str, str] = scope.get(ANSWER_HEADERS) or {}
    if _left(known) < _left(headers):
        headers = {k: v for k, v in headers.items() if not k.startswith(_RATE)}
    scope[ANSWER_HEADERS] = {**known, **headers}


def limited(bucket: str, client: str) -> None:
    """Charge one request to the node's ``bucket`` for ``client`` (``429`` past it); its
    RateLimit-* go out with the answer."""
    answer_headers(node().manage_rates.take(bucket, client))


_RATE = "RateLimit-"


def _left(headers: dict[str, str]) -> float:
    value = headers.get("RateLimit-Remaining")
    return int(value) if value is not None and value.isdigit() else math.inf
