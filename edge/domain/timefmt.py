"""Wire timestamps: ISO 8601 UTC with milliseconds (CONTRACT §1).

Inside the node time is an int of Unix milliseconds; these two functions are
the only conversion to and from text.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from .errors import InvalidInput

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MS = timedelta(milliseconds=1)


def iso_ms(ms: int) -> str:
    """``2026-11-21T09:48:00.000Z`` for Unix ms; always 24 chars for years 1-9999,
    so strings sort like the instants they name."""
    dt = _EPOCH + timedelta(milliseconds=ms)
    return (
        f"{dt.year:04d}-{dt.month:02d}-{dt.day:02d}T"
        f"{dt.hour:02d}:{dt.minute:02d}:{dt.second:02d}.{dt.microsecond // 1000:03d}Z"
    )


def parse_iso_ms(text: str, field: str | None = None) -> int:
    """Unix ms of an ISO 8601 timestamp that names its offset (``Z`` or ``+hh:mm``).

    The fraction is optional; digits past the millisecond are truncated.
    Timestamps without an offset are refused: guessing the zone would shift
    them silently. Raises InvalidInput on anything else.
    """
    if not isinstance(text, str) or len(text) > 64 or not text.isascii():
        raise InvalidInput("Expected an ISO 8601 timestamp.", field=field)
    try:
        dt = datetime.fromisoformat(text)
    except ValueError:
        raise InvalidInput(
            f"{text!r} is not an ISO 8601 timestamp like 2026-11-21T09:48:00.000Z.", field=field
        ) from None
    if dt.tzinfo is None or dt.utcoffset() is None:
        raise InvalidInput("The timestamp must carry a UTC offset such as 'Z'.", field=field)
    return (dt - _EPOCH) // _MS
