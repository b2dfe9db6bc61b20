"""The node's own pauses, counted so that no client deadline pays for them (edge.domain.stalls)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from edge.domain.stalls import KEPT_S, STALL_S, TICK_S, Stalls


def test_ticks_on_time_are_no_stall():
    stalls = Stalls(0.0)
    for n in range(1, 50):
        assert stalls.tick(n * TICK_S + 0.01) <= 0.02
    assert stalls.count == 0 and stalls.since(0.0, 5.0 + TICK_S) == 0.0


def test_a_stall_counts_for_deadlines_that_were_running_through_it():
    stalls = Stalls(0.0)
    stalls.tick(0.1)
    assert stalls.tick(3.2) == 3.2 - 0.1 - TICK_S  # the process stood still about 3 s
    assert stalls.count == 1
    assert stalls.since(0.05, 3.3) == 3.0  # a deadline begun before it: moved by all of it
    assert abs(stalls.since(1.2, 3.3) - 2.0) < 1e-9  # begun during it: by what was left
    assert stalls.since(3.25, 3.3) == 0.0  # one begun after it: not at all


def test_the_stall_under_way_counts_before_the_ticking_task_has_run():
    # a deadline and the tick fall due in the same turn of the loop: the deadline may look first
    stalls = Stalls(0.0)
    stalls.tick(0.1)
    assert stalls.since(0.0, 3.2) == 3.0
    assert stalls.since(0.0, 0.1 + TICK_S + STALL_S / 2) == 0.0  # jitter is no stall


def test_stalls_are_forgotten_after_an_hour():
    stalls = Stalls(0.0)
    stalls.tick(2.0)
    now = 2.0
    while now < KEPT_S + 10:
        now += TICK_S
        stalls.tick(now)
    assert stalls.since(0.0, now) == 0.0 and stalls.count == 1


@given(st.lists(st.floats(min_value=0.0, max_value=5.0), min_size=1, max_size=40))
def test_what_a_deadline_is_moved_by_is_never_more_than_the_time_gone(gaps):
    stalls, now = Stalls(0.0), 0.0
    for gap in gaps:
        now += TICK_S + gap
        stalls.tick(now)
        for start in (0.0, now / 2, now):
            assert 0.0 <= stalls.since(start, now) <= now - start + 1e-9


def test_a_pause_of_the_ticking_is_no_stall():
    stalls = Stalls(0.0)
    stalls.tick(0.1)
    stalls.pause()  # no client connected: nothing ticks
    assert stalls.since(0.0, 60.0) == 0.0
    stalls.resume(60.0)  # a client connects: counted afresh from now
    assert stalls.since(60.0, 60.1) == 0.0 and stalls.tick(60.1) < STALL_S
    assert stalls.count == 0
