"""A provider failing a project's buyers steps aside and comes back (domain.provider_health)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from edge.domain.provider_health import FAILING_AFTER, PROBE_MAX_S, PROBE_S, WINDOW_S, Health


def test_failures_in_a_row_make_it_failing_and_one_success_heals_it():
    health = Health()
    assert [health.failed(t) for t in range(FAILING_AFTER)] == [False] * (FAILING_AFTER - 1) + [
        True
    ]
    assert health.failing and not health.probe_due(FAILING_AFTER)
    assert health.probe_due(FAILING_AFTER - 1 + PROBE_S)
    assert health.worked() is True and not health.failing and health.worked() is False


def test_failures_far_apart_are_no_outage():
    health = Health()
    for n in range(10):
        assert health.failed(n * WINDOW_S) is False
    assert not health.failing


def test_a_success_between_failures_starts_the_count_again():
    health = Health()
    health.failed(0.0)
    health.failed(1.0)
    health.worked()
    health.failed(2.0)
    assert not health.failing


def test_probes_grow_apart_while_it_keeps_failing_up_to_a_bound():
    health = Health()
    for t in range(FAILING_AFTER):
        health.failed(float(t))
    now, gaps = float(FAILING_AFTER), []
    for _ in range(8):
        assert health.probe_at is not None
        gaps.append(health.probe_at - now)
        now = health.probe_at
        health.probe_failed(now)
    assert gaps == sorted(gaps) and max(gaps) <= PROBE_MAX_S


@given(st.lists(st.tuples(st.booleans(), st.floats(min_value=0, max_value=30)), max_size=60))
def test_failing_exactly_when_the_last_failures_came_in_a_row_within_the_window(steps):
    health, now, streak = Health(), 0.0, []
    for ok, gap in steps:
        now += gap
        if ok:
            health.worked()
            streak = []
        else:
            was = health.failing
            health.failed(now)
            streak = [t for t in streak if now - t < WINDOW_S] + [now]
            if not was:
                assert health.failing == (len(streak) >= FAILING_AFTER)
    if not streak:
        assert not health.failing
