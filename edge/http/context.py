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
        cast(Any, request.scope)[ANSWER_HEADERS] = result.headers  # for the middleware
        return result.value
    return result
