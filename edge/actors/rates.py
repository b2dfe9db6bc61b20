"""A project's rate buckets (CONTRACT 8), owned by its actor: one flooded project never shares
a bucket, a lock or a queue with another."""

from __future__ import annotations

import math
import time
from collections.abc import Callable

from edge.config import Settings
from edge.domain.rate import Buckets, Decision
from edge.errors import RateLimited


class ProjectRates:
    """The buckets of one project's tier, each made when first charged: most projects only
    ever use one or two of them, and an idle project's actor should cost little."""

    __slots__ = ("tier", "_settings", "_buckets", "_clock")

    def __init__(
        self, settings: Settings, tier: str, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.tier = tier
        self._settings = settings
        self._buckets: dict[str, Buckets] | None = None
        self._clock = clock

    def take(self, bucket: str, client: str) -> dict[str, str]:
        """Charge one request; return its RateLimit-* headers, or raise ``429 rate_limited``."""
        if self._buckets is None:
            self._buckets = {}
        buckets = self._buckets.get(bucket)
        if buckets is None:
            settings = self._settings
            limit = settings.tier_rate_limits.get(self.tier, {}).get(bucket)
            limit = limit or settings.rate_limits[bucket]  # KeyError: a bucket no one set
            buckets = self._buckets[bucket] = Buckets(limit, max_keys=20_000)
        decision = buckets.take(client, self._clock())
        headers = rate_headers(decision)
        if not decision.allowed:
            headers["Retry-After"] = str(max(1, math.ceil(decision.retry_after_s)))
            raise RateLimited(
                "rate_limited",
                f"Too many requests; retry in {headers['Retry-After']} s.",
                retryable=True,
                headers=headers,
            )
        return headers


def rate_headers(decision: Decision) -> dict[str, str]:
    return {
        "RateLimit-Limit": str(decision.limit),
        "RateLimit-Remaining": str(decision.remaining),
        "RateLimit-Reset": str(max(0, math.ceil(decision.reset_s))),
    }
