"""When the node asks a provider about a checkout (edge.domain.asking)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from edge.domain.asking import HOUR_MS, WEEK_MS, looks_end_at, next_look_ms

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


def test_a_payment_under_way_is_asked_about_past_its_checkouts_end():
    """A buyer who paid at minute 14 of a 15-minute checkout (a crypto payment waiting for
    its confirmations, a bank debit settling for days): the checkout's end no longer bounds
    the looks, a week's schedule does, so a settlement whose webhook is lost is still learned."""
    expires = 15 * 60_000
    assert looks_end_at("pending", expires) == expires
    assert looks_end_at("processing", expires) is None
    after = expires + 2 * EVERY
    assert next_look_ms(after, 0, looks_end_at("pending", expires), EVERY) is None
    assert next_look_ms(after, 0, looks_end_at("processing", expires), EVERY) == after + EVERY
    assert next_look_ms(WEEK_MS, 0, looks_end_at("processing", expires), EVERY) is None
