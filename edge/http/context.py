"""The running node, as seen from a request handler."""

from __future__ import annotations

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
    adds them): a rate bucket's RateLimit-*; a later bucket's replace an earlier one's."""
    scope = cast(Any, request.scope)
    scope[ANSWER_HEADERS] = {**scope.get(ANSWER_HEADERS, {}), **headers}
