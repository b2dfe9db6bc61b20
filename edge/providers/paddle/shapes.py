"""Paddle's own shapes of JSON values (``edge.providers.reading`` reads the rest): its ids and
its times. Pure: no I/O.

- An id is a prefix of 2 to 6 lower-case letters, ``_`` and 26 characters of ``[a-z0-9]``
  (openapi.yaml: ``transaction_id`` ``^txn_[a-z\\d]{26}$``, ``adjustment_id``
  ``^adj_[a-z\\d]{26}$``, ``event_id`` ``^evt_[a-z\\d]{26}$`` ...).
- A time is RFC 3339 as Paddle writes it, with 0 to 9 fraction digits
  (``2024-04-12T10:18:49.621022Z``), read to the millisecond.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any

_PADDLE_ID = re.compile(r"[a-z]{2,6}_[a-z0-9]{26}")
_TIME = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:\d\d)")


def paddle_id(o: Mapping[str, Any], key: str, prefix: str) -> str | None:
    """``o[key]`` when it is a Paddle id of the expected kind (``txn_``, ``sub_`` ...), else
    None."""
    value = o.get(key)
    ok = isinstance(value, str) and value.startswith(prefix) and _PADDLE_ID.fullmatch(value)
    return value if ok else None


def time_ms(value: Any) -> int | None:
    """Milliseconds of a Paddle RFC 3339 time (``2024-04-12T10:18:49.621022Z``); None for
    anything else."""
    if not isinstance(value, str):
        return None
    match = _TIME.fullmatch(value)
    if match is None:
        return None
    whole, fraction, zone = match.groups()
    try:
        moment = datetime.fromisoformat(whole + zone.replace("Z", "+00:00"))
    except ValueError:
        return None
    return int(moment.timestamp()) * 1000 + int((fraction or "0").ljust(3, "0")[:3])
