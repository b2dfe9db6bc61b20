from datetime import UTC, datetime

import pytest

from edge.domain.errors import InvalidInput
from edge.domain.quota import DEFAULT_TIERS, Tier, over_quota, period_end_ms, period_of


def ms(*args):
    return int(datetime(*args, tzinfo=UTC).timestamp() * 1000)


def test_period_of_boundaries():
    assert period_of(ms(2026, 11, 21, 9, 48)) == "2026-11"
    assert period_of(ms(2026, 12, 1) - 1) == "2026-11"
    assert period_of(ms(2026, 12, 1)) == "2026-12"
    assert period_of(0) == "1970-01"


@pytest.mark.parametrize(
    "period,end",
    [("2026-11", (2026, 12, 1)), ("2026-12", (2027, 1, 1)), ("2024-02", (2024, 3, 1))],
)
def test_period_end(period, end):
    assert period_end_ms(period) == ms(*end)
    assert period_of(period_end_ms(period) - 1) == period
    assert period_of(period_end_ms(period)) != period


@pytest.mark.parametrize(
    "bad",
    ["2026-13", "2026-00", "2026-1", "26-11", "2026-11x", "", None, "9999-12", "２０２６-11"],
)
def test_period_end_rejects(bad):
    with pytest.raises(InvalidInput):
        period_end_ms(bad)


def test_default_tiers():
    free, pro = DEFAULT_TIERS["free"], DEFAULT_TIERS["pro"]
    assert (free.name, free.live_events, free.test_events) == ("free", 1000, 1000)
    assert (pro.live_events, pro.test_events) == (100_000, 100_000)


def test_over_quota_per_mode():
    t = Tier("x", live_events=10, test_events=3)
    assert not over_quota(t, False, 9) and over_quota(t, False, 10) and over_quota(t, False, 11)
    assert not over_quota(t, True, 2) and over_quota(t, True, 3)
    assert not over_quota(DEFAULT_TIERS["free"], False, 999)
    assert over_quota(DEFAULT_TIERS["free"], False, 1000)
