"""``Cm-Request-Id``: unique in this node's life (a random boot prefix and a counter), made by
edge.http.middleware for every request."""

from __future__ import annotations

import itertools
import secrets

_BOOT = secrets.token_hex(5)
_COUNTER = itertools.count(1)


def new_request_id() -> str:
    return f"req_{_BOOT}{next(_COUNTER):010x}"
