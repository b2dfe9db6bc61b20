"""The running node, as seen from a request handler."""

from __future__ import annotations

from typing import Any, cast

from quart import current_app

from edge.actors.context import NodeContext


def node() -> NodeContext:
    return cast(Any, current_app).edge


async def ask(project_id: str, message: Any) -> Any:
    registry = node().registry
    assert registry is not None
    return await registry.call(project_id, message)
