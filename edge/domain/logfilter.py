"""Which lines of the node's activity a reader of ``edge logs`` asked for: by status, as an
exact code (``404``), a class (``4xx``), ``error`` (4xx, 5xx, or no answer at all: a
notification that got none), or several of them, comma-separated (``4xx,5xx``)."""

from __future__ import annotations

import re
from collections.abc import Callable

from edge.domain.errors import InvalidInput

_PART = r"[1-5](?:[0-9]{2}|xx)|error"
# the whole value, as the API reference states it: at most 10 parts
PATTERN = f"^(?:{_PART})(?: *, *(?:{_PART})){{0,9}}$"
_WHOLE = re.compile(PATTERN)


def status_filter(text: str | None) -> Callable[[int | None], bool]:
    """A test of a line's status (an HTTP code, or None when there was no answer)."""
    if text is None:
        return lambda status: True
    if _WHOLE.fullmatch(text) is None:
        raise InvalidInput(
            "status is a code (404), a class (4xx) or error, or several, comma-separated",
            "status",
        )
    parts = [part.strip() for part in text.split(",")]

    def matches(status: int | None) -> bool:
        for part in parts:
            if part == "error":
                if status is None or status >= 400:
                    return True
            elif status is not None and (
                str(status) == part or (part.endswith("xx") and str(status)[0] == part[0])
            ):
                return True
        return False

    return matches
