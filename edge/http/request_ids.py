"""``Cm-Request-Id``: unique in this node's life (a random boot prefix and a counter), made by
edge.http.middleware for every request, as the ASCII bytes that go on the wire."""

from __future__ import annotations

import itertools
import secrets

_PREFIX = f"req_{secrets.token_hex(5)}".encode()
_COUNTER = itertools.count(1)


def new_request_id() -> bytes:
    return b"%s%010x" % (_PREFIX, next(_COUNTER))
