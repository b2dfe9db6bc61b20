"""When the node asks a provider about a checkout (edge.domain.asking)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from edge.domain.asking import HOUR_MS, WEEK_MS, next_look_ms

EVERY = 300_000


def test_every_five_minutes_until_once_past_the_expiry():
    created, expires = 0, 30 * 60_000
    looks, now = [], created + EVERY
    while now is not None:
        looks.append(now)
        now = next_look_ms(now, created, expires, EVERY)
    assert looks[0] == EVERY and looks[-1] == expires + EVERY
    assert all(b - a <= EVERY for a, b in zip(looks, looks[1:], strict=False))
    assert len(looks) == 7


def test_without_an_expiry_hourly_after_the_first_hour_for_a_week():
    assert next_look_ms(10 * 60_000, 0, None, EVERY) == 15 * 60_000
    assert next_look_ms(2 * HOUR_MS, 0, None, EVERY) == 3 * HOUR_MS
    assert next_look_ms(WEEK_MS, 0, None, EVERY) is None


@given(st.integers(0, 10**9), st.integers(0, 10**9), st.integers(1, 10**6))
def test_a_look_is_never_more_than_the_period_away_while_the_checkout_is_open(now, exp, every):
    look = next_look_ms(now, 0, exp, every)
    if look is not None:
        assert now < look <= now + every
