"""A node's offset from its store's clock, read with each heartbeat (edge.domain.clock_offset)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from edge.domain.clock_offset import MAX_ROUND_TRIP_MS, SETTLE_MS, offset_after

OFFSETS = st.integers(min_value=-(10**10), max_value=10**10)
NOW = st.integers(min_value=0, max_value=4 * 10**12)
TRIPS = st.integers(min_value=0, max_value=MAX_ROUND_TRIP_MS)


def test_the_first_reading_is_taken_whatever_its_round_trip():
    # the store said 1_000_030 while the local clock went from 1_000 to 1_060: 30 ahead of
    # the midpoint... of a clock 999_000 ms behind
    assert offset_after(None, 1_000_030, 1_000, 1_060) == 999_000
    assert offset_after(None, 50_000, 0, 10_000) == 45_000


def test_a_clock_stepped_back_during_the_reading_tells_nothing():
    assert offset_after(None, 5_000, 1_000, 900) is None
    assert offset_after(7, 5_000, 1_000, 900) == 7


def test_a_slow_reading_does_not_correct_a_known_offset():
    assert offset_after(0, 60_000, 0, MAX_ROUND_TRIP_MS + 1) == 0


def test_a_wobble_within_the_reading_keeps_the_offset_and_a_jump_is_taken():
    assert offset_after(30_000, 30_000 + 500 + 5, 490, 510) == 30_000  # 5 ms off: kept
    assert offset_after(30_000, 31_000 + 500, 490, 510) == 31_000  # the local clock stepped


@given(OFFSETS, NOW, TRIPS, st.data())
def test_an_offset_taken_is_off_by_at_most_half_the_round_trip(true_offset, sent, trip, data):
    """Whenever the store's instant fell inside the reading, the offset kept after it is the
    true one within half the round trip (and the settling margin, when an earlier one was
    kept because it already was)."""
    at = data.draw(st.integers(min_value=sent, max_value=sent + trip))  # the store read here
    current = data.draw(st.none() | OFFSETS)
    kept = offset_after(current, at + true_offset, sent, sent + trip)
    assert kept is not None
    if kept != current or current is None:
        assert abs(kept - true_offset) <= trip // 2 + 1
    else:
        assert abs(kept - true_offset) <= trip + SETTLE_MS + 1


@given(OFFSETS, st.lists(st.tuples(NOW, TRIPS, st.floats(0, 1)), min_size=1, max_size=20))
def test_a_run_of_readings_stays_within_their_uncertainty(true_offset, readings):
    current: int | None = None
    for sent, trip, where in readings:
        at = sent + round(trip * where)
        current = offset_after(current, at + true_offset, sent, sent + trip)
        assert current is not None
        assert abs(current - true_offset) <= trip + SETTLE_MS + 1
