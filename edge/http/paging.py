"""What every paged list read shares: the ``limit`` query parameter."""

from __future__ import annotations

from quart import request

from edge.domain.errors import InvalidInput
from edge.domain.inputs import bounded_int


def limit(default: int, high: int) -> int:
    raw = request.args.get("limit")
    if raw is None:
        return default
    value = bounded_int(raw, 1, high)
    if value is None:
        raise InvalidInput(f"limit must be an integer from 1 to {high}", "limit")
    return value
