"""The ``Idempotency-Key`` header of the requests that make something (CONTRACT 4.2: a
checkout; a refund, where the contract is silent, is kept the same way): read and checked here,
kept by the project's actor (``edge.actors.project.idempotency``)."""

from __future__ import annotations

import hashlib
import re
from typing import Any

from quart import request

from edge.errors import InvalidRequest
from edge.http.jsonio import dumps

MAX_KEY = 255
# visible ASCII only: a key is compared byte for byte, and a space or a character a proxy may
# re-encode would make two retries of one request look like two requests
_KEY = re.compile(rf"[!-~]{{1,{MAX_KEY}}}")


def key() -> str | None:
    """The request's key, if it has one; ``400`` when it is not one."""
    value = request.headers.get("Idempotency-Key")
    if value is not None and not _KEY.fullmatch(value):
        raise InvalidRequest(
            "invalid_request",
            f"Idempotency-Key must be 1 to {MAX_KEY} visible ASCII characters (no spaces).",
            field="Idempotency-Key",
        )
    return value


def body_hash(fields: dict[str, Any]) -> str:
    """The same request is the same parsed body, whatever its spacing or key order."""
    return hashlib.sha256(dumps(fields, sort_keys=True)).hexdigest()
