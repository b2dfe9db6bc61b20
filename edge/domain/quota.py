"""Monthly event quota (CONTRACT §8): periods and tiers."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from types import MappingProxyType

from .errors import InvalidInput

_PERIOD_RE = re.compile(r"([0-9]{4})-([0-9]{2})")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def period_of(ms: int) -> str:
    """The calendar month (UTC) containing Unix ms, as ``YYYY-MM``."""
    dt = _EPOCH + timedelta(milliseconds=ms)
    return f"{dt.year:04d}-{dt.month:02d}"


def period_end_ms(period: str) -> int:
    """Unix ms of the first instant of the month after ``period`` (exclusive end)."""
    m = _PERIOD_RE.fullmatch(period) if isinstance(period, str) else None
    if m is None or not 1 <= int(m.group(2)) <= 12 or int(m.group(1)) < 1:
        raise InvalidInput(f"{period!r} is not a period like 2026-11.", field="period")
    year, month = int(m.group(1)), int(m.group(2))
    year, month = (year + 1, 1) if month == 12 else (year, month + 1)
    if year > 9999:
        raise InvalidInput(f"{period!r} is not a period like 2026-11.", field="period")
    return (datetime(year, month, 1, tzinfo=UTC) - _EPOCH) // timedelta(milliseconds=1)


@dataclass(frozen=True)
class Tier:
    """Allowance of stored webhook events per calendar month, per mode."""

    name: str
    live_events: int
    test_events: int


DEFAULT_TIERS: Mapping[str, Tier] = MappingProxyType(
    {
        "free": Tier("free", live_events=1_000, test_events=1_000),
        "pro": Tier("pro", live_events=100_000, test_events=100_000),
    }
)


def over_quota(tier: Tier, is_test: bool, used: int) -> bool:
    """True once ``used`` events have exhausted the allowance of that mode.

    Being over quota never drops an event (a payment confirmation is always
    stored); callers use this only to flag the project and refuse new live
    checkouts.
    """
    allowance = tier.test_events if is_test else tier.live_events
    return used >= allowance
