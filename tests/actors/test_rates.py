"""A project's rate buckets (edge.actors.rates): the tier's own limit over the node's, each
bucket made when first charged, 429 with Retry-After once one is spent."""

from __future__ import annotations

from pathlib import Path

import pytest

from edge.actors.rates import ProjectRates
from edge.config import DEFAULT_RATE_LIMITS, Limit, Settings
from edge.errors import RateLimited


def settings() -> Settings:
    return Settings(
        Path("/nonexistent"),
        rate_limits={**DEFAULT_RATE_LIMITS, "status": Limit(2, 60.0)},
        tier_rate_limits={"big": {"status": Limit(5, 60.0)}},
    )


def spend(rates: ProjectRates, bucket: str, client: str) -> int:
    """How many requests ``client`` may make at once before a 429."""
    for taken in range(100):
        try:
            rates.take(bucket, client)
        except RateLimited as refused:
            assert int(refused.headers["Retry-After"]) >= 1
            return taken
    raise AssertionError("never limited")


def test_a_tiers_limit_wins_over_the_nodes_and_clients_have_their_own_buckets():
    now = [0.0]
    small = ProjectRates(settings(), "free", clock=lambda: now[0])
    big = ProjectRates(settings(), "big", clock=lambda: now[0])
    assert spend(small, "status", "1.2.3.4") == 2
    assert spend(small, "status", "5.6.7.8") == 2
    assert spend(big, "status", "1.2.3.4") == 5
    assert small.take("webhook", "stripe")["RateLimit-Limit"] == str(
        DEFAULT_RATE_LIMITS["webhook"].count
    )
    now[0] += 60.0  # a period later the bucket is full again
    assert spend(small, "status", "1.2.3.4") == 2


def test_a_bucket_is_made_when_first_charged_and_an_unknown_one_is_a_fault():
    rates = ProjectRates(settings(), "free")
    assert rates._buckets is None  # an idle project's actor holds none
    rates.take("status", "1.2.3.4")
    assert list(rates._buckets or {}) == ["status"]
    with pytest.raises(KeyError):
        rates.take("no-such-bucket", "1.2.3.4")
