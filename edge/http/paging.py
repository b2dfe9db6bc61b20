"""What every paged list read shares: the ``limit`` query parameter, and running the read in a
worker thread (LMDB readers may), so no project actor waits on a long scan."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import trio
from quart import request

from edge.domain.errors import InvalidInput
from edge.domain.inputs import bounded_int


async def read(query: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    return await trio.to_thread.run_sync(partial(query, *args, **kwargs))


def limit(default: int, high: int) -> int:
    raw = request.args.get("limit")
    if raw is None:
        return default
    value = bounded_int(raw, 1, high)
    if value is None:
        raise InvalidInput(f"limit must be an integer from 1 to {high}", "limit")
    return value
