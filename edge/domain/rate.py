"""Rate limiting with GCRA (generic cell rate algorithm), pure and clock-free.

The caller passes ``now`` (seconds, any monotonic origin) so tests can drive a
fake clock and the project's actor owns the only mutable state.
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from dataclasses import dataclass

# Float slack for comparisons: with period/count inexact (60/600 = 0.1) the
# tat accumulates rounding error, and without slack the 600th request of a
# 600-per-minute burst could be refused by one ulp.
_EPS = 1e-9


@dataclass(frozen=True)
class Limit:
    """``count`` requests at once, then one every ``period_s / count`` seconds.

    Limit(60, 60) admits a burst of exactly 60; the 61st is refused and may
    retry one second later.
    """

    count: int
    period_s: float

    def __post_init__(self) -> None:
        if self.count < 1 or not self.period_s > 0:
            raise ValueError("a Limit needs count >= 1 and period_s > 0")

    @property
    def interval_s(self) -> float:
        return self.period_s / self.count


@dataclass(slots=True)  # not frozen: made per request (docs/architecture.md)
class Decision:
    """Outcome of one request; fields map onto the RateLimit-* and Retry-After headers."""

    allowed: bool
    limit: int
    remaining: int
    reset_s: float  # seconds until the bucket is full again
    retry_after_s: float  # 0 when allowed


def gcra(limit: Limit, tat: float | None, now: float) -> tuple[Decision, float | None]:
    """Decide one request against theoretical arrival time ``tat`` (None: fresh bucket).

    Returns the decision and the new tat; a refused request leaves tat
    unchanged, so hammering while limited does not extend the wait.
    """
    interval = limit.interval_s
    base = now if tat is None or tat < now else tat
    new_tat = base + interval
    allow_at = new_tat - limit.period_s
    if allow_at > now + _EPS:
        decision = Decision(
            allowed=False,
            limit=limit.count,
            remaining=0,
            reset_s=max(0.0, base - now),
            retry_after_s=allow_at - now,
        )
        return decision, tat
    remaining = math.floor((now + limit.period_s - new_tat) / interval + _EPS)
    decision = Decision(
        allowed=True,
        limit=limit.count,
        remaining=max(0, min(limit.count - 1, remaining)),
        reset_s=new_tat - now,
        retry_after_s=0.0,
    )
    return decision, new_tat


class Buckets:
    """GCRA buckets for many keys (client addresses, API keys) under one Limit.

    Memory stays bounded: a key whose bucket is full again (tat <= now) holds
    no information and is forgotten. Each ``take`` sweeps a few of the least
    recently used keys; past ``max_keys`` a full sweep drops every full bucket
    and, if that leaves less than 10% headroom, the least recently used keys
    down to 90% of ``max_keys`` (those then get a fresh burst: the price of a
    hard bound under a flood of distinct keys).
    """

    _SWEEP_PER_TAKE = 2

    def __init__(self, limit: Limit, max_keys: int = 100_000):
        if max_keys < 1:
            raise ValueError("max_keys must be >= 1")
        self.limit = limit
        self.max_keys = max_keys
        # Insertion order = least recently used first (take() moves keys to the end).
        self._tats: dict[Hashable, float] = {}

    def __len__(self) -> int:
        return len(self._tats)

    def take(self, key: Hashable, now: float) -> Decision:
        """Count one request for ``key`` at ``now`` and say whether it may proceed."""
        tat = self._tats.pop(key, None)
        decision, new_tat = gcra(self.limit, tat, now)
        if new_tat is not None:
            self._tats[key] = new_tat
        self._sweep_some(now)
        if len(self._tats) > self.max_keys:
            self._shrink(now)
        return decision

    def wait_s(self, key: Hashable, now: float) -> float:
        """Seconds until a ``take`` for ``key`` would be allowed (0: now), taking nothing."""
        tat = self._tats.get(key)
        if tat is None:
            return 0.0
        return max(0.0, tat + self.limit.interval_s - self.limit.period_s - now)

    def _sweep_some(self, now: float) -> None:
        # Bounded work per call; stops at the first bucket still in use
        # because the rest were touched even more recently.
        for _ in range(self._SWEEP_PER_TAKE):
            oldest = next(iter(self._tats), None)
            if oldest is None or self._tats[oldest] > now:
                return
            del self._tats[oldest]

    def _shrink(self, now: float) -> None:
        for key in [k for k, t in self._tats.items() if t <= now]:
            del self._tats[key]
        # Keep max_keys/10 headroom so this O(n) pass runs at most once per
        # that many new keys, even when every bucket is still in use.
        target = self.max_keys - self.max_keys // 10
        while len(self._tats) > target:
            del self._tats[next(iter(self._tats))]
