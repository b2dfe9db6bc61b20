"""``Cm-Request-Id``: unique in this node's life (a random boot prefix and a counter), made once
per request when first needed."""

from __future__ import annotations

import itertools
import secrets

from quart import request

_BOOT = secrets.token_hex(5)
_COUNTER = itertools.count(1)


def new_request_id() -> str:
    return f"req_{_BOOT}{next(_COUNTER):010x}"


def request_id() -> str:
    """This request's id (Quart's request context)."""
    rid = getattr(request, "edge_request_id", None)
    if rid is None:
        rid = new_request_id()
        request.edge_request_id = rid  # type: ignore[attr-defined]
    return rid
