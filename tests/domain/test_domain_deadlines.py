import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from edge.domain.deadlines import BUSY, HEADERS, IDLE, RequestClock, body_deadline

KEEP_ALIVE, HEADER_TIMEOUT = 5.0, 10.0


def clock(now=100.0):
    return RequestClock(KEEP_ALIVE, HEADER_TIMEOUT, now)


def test_a_new_connection_is_idle_for_the_keep_alive():
    c = clock(100.0)
    assert c.phase is IDLE and c.deadline == 105.0


def test_a_first_byte_starts_the_header_time_from_that_byte():
    c = clock(100.0)
    assert c.received(104.9) == pytest.approx(114.9)  # a pause, then headers: 10 s from then
    assert c.phase is HEADERS


def test_more_header_bytes_buy_no_time():
    c = clock(100.0)
    c.received(101.0)
    for now in (102.0, 105.0, 110.9):
        assert c.received(now) == 111.0
    assert c.phase is HEADERS


def test_complete_headers_have_no_deadline_however_long_the_request():
    c = clock(100.0)
    c.received(101.0)
    assert c.busy() == math.inf and c.phase is BUSY
    assert c.received(200.0) == math.inf  # a long poll's silence, a body's bytes: not headers


def test_after_an_answer_the_keep_alive_starts_again():
    c = clock(100.0)
    c.received(101.0)
    c.busy()
    assert c.idle(130.0) == 135.0 and c.phase is IDLE
    assert c.received(134.0) == 144.0  # the next request's first byte


_EVENTS = st.lists(
    st.tuples(st.sampled_from(["idle", "received", "busy"]), st.floats(0, 60)), max_size=30
)


@given(_EVENTS)
def test_the_deadline_always_follows_the_phase(events):
    now = 0.0
    c = clock(now)
    first_byte = last_idle = now
    for event, gap in events:
        now += gap
        before = c.phase
        if event == "idle":
            c.idle(now)
            last_idle = now
        elif event == "received":
            c.received(now)
            if before is IDLE:
                first_byte = now
        else:
            c.busy()
        expected = {
            IDLE: last_idle + KEEP_ALIVE,
            HEADERS: first_byte + HEADER_TIMEOUT,
            BUSY: math.inf,
        }[c.phase]
        assert c.deadline == expected
        if c.phase is not before or event == "idle":
            assert c.deadline > now  # a phase entered now is never already late


def test_a_body_has_its_grace_then_pays_by_the_byte():
    assert body_deadline(50.0, 0, 1024.0, 2.0) == 52.0
    assert body_deadline(50.0, 1024, 1024.0, 2.0) == 53.0
    assert body_deadline(50.0, 10 * 1024, 1024.0, 0.0) == 60.0


@given(
    st.integers(0, 2**20),
    st.integers(0, 2**20),
    st.floats(1.0, 1e6),
    st.floats(0.0, 10.0),
)
def test_a_body_deadline_grows_with_what_came(a, b, rate, grace):
    lo, hi = sorted((a, b))
    assert body_deadline(0.0, lo, rate, grace) <= body_deadline(0.0, hi, rate, grace)
    assert body_deadline(0.0, lo, rate, grace) >= grace


@given(st.integers(1, 1000), st.floats(1.0, 1e5))
def test_a_sender_at_the_least_rate_is_never_late(chunks, rate):
    # each chunk of ``rate`` bytes comes one second after the last: always before its deadline
    received = 0
    for n in range(1, chunks + 1):
        assert n <= body_deadline(0.0, received, rate, 1.0)
        received += int(rate) + 1
