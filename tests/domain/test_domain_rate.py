import pytest

from edge.domain.rate import Buckets, Limit, gcra

T0 = 1000.0


def burst(limit, n, now=T0, tat=None):
    decisions = []
    for _ in range(n):
        d, tat = gcra(limit, tat, now)
        decisions.append(d)
    return decisions, tat


def test_limit_validation():
    for bad in [(0, 60), (-1, 60), (1, 0), (1, -1)]:
        with pytest.raises(ValueError):
            Limit(*bad)
    assert Limit(60, 60).interval_s == 1.0


def test_sixty_then_sixty_first_refused():
    lim = Limit(60, 60)
    ds, tat = burst(lim, 60)
    assert all(d.allowed for d in ds)
    assert [d.remaining for d in ds] == list(range(59, -1, -1))
    assert all(d.limit == 60 and d.retry_after_s == 0 for d in ds)
    assert ds[0].reset_s == pytest.approx(1.0) and ds[-1].reset_s == pytest.approx(60.0)
    d, tat2 = gcra(lim, tat, T0)
    assert not d.allowed and d.remaining == 0
    assert d.retry_after_s == pytest.approx(1.0)
    assert d.reset_s == pytest.approx(60.0)
    assert tat2 == tat  # refusals do not extend the wait


def test_retry_after_is_exact():
    lim = Limit(60, 60)
    _, tat = burst(lim, 60)
    d, _ = gcra(lim, tat, T0 + 0.999)
    assert not d.allowed and d.retry_after_s == pytest.approx(0.001)
    d, tat = gcra(lim, tat, T0 + 1.0)
    assert d.allowed and d.remaining == 0
    d, _ = gcra(lim, tat, T0 + 1.0)
    assert not d.allowed


def test_refill_over_time():
    lim = Limit(60, 60)
    _, tat = burst(lim, 60)
    ds, tat = burst(lim, 11, now=T0 + 10, tat=tat)
    assert [d.allowed for d in ds] == [True] * 10 + [False]
    # After a full period of silence the whole burst is available again.
    ds, _ = burst(lim, 61, now=T0 + 200, tat=tat)
    assert sum(d.allowed for d in ds) == 60 and not ds[-1].allowed


def test_steady_rate_is_sustainable():
    lim = Limit(60, 60)
    tat = None
    for i in range(500):
        d, tat = gcra(lim, tat, T0 + i * 1.0)
        assert d.allowed and d.remaining == 59


@pytest.mark.parametrize("count,period", [(600, 60), (30, 60), (300, 60), (6000, 60), (7, 3.3)])
def test_exact_burst_for_inexact_intervals(count, period):
    lim = Limit(count, period)
    ds, _ = burst(lim, count + 1)
    assert all(d.allowed for d in ds[:-1]) and not ds[-1].allowed
    assert ds[-2].remaining == 0 and ds[0].remaining == count - 1
    assert ds[-1].retry_after_s == pytest.approx(period / count)


def test_buckets_independent_keys():
    b = Buckets(Limit(3, 3))
    assert [b.take("a", T0).allowed for _ in range(4)] == [True, True, True, False]
    assert b.take("b", T0).allowed and b.take("b", T0).remaining == 1
    assert not b.take("a", T0).allowed
    assert b.take("a", T0 + 1).allowed


def test_buckets_forget_full_buckets():
    b = Buckets(Limit(10, 10))
    for i in range(100):
        b.take(i, T0)
    assert len(b) == 100
    # One second later each bucket is full again (one request costs 1 s).
    for i in range(100, 200):
        b.take(i, T0 + 1 + i * 0.001)
    assert len(b) <= 100 + 2
    # A long quiet period and a few requests sweep almost everything.
    for i in range(200):
        b.take("late", T0 + 100 + i)
    assert len(b) == 1


def test_buckets_memory_bounded_and_drops_full_first():
    b = Buckets(Limit(5, 50), max_keys=100)
    for i in range(100):
        b.take(("busy", i), T0)
        b.take(("busy", i), T0)
    # "busy" buckets (two requests) stay non-full until T0+20; "idle" ones
    # (one request, a second later) are full from T0+11. Busy keys are the
    # least recently used, so only the over-limit pass can find the idle ones.
    b2 = Buckets(Limit(5, 50), max_keys=100)
    for i in range(50):
        b2.take(("busy", i), T0)
        b2.take(("busy", i), T0)
    for i in range(50):
        b2.take(("idle", i), T0 + 1)
    assert len(b2) == 100
    b2.take("new", T0 + 12)
    assert sorted(k for k in b2._tats if k != "new") == [("busy", i) for i in range(50)]
    # With nothing full, the least recently used go first and the bound holds.
    for i in range(1000):
        b.take(("flood", i), T0)
        assert len(b) <= 100
    assert ("flood", 999) in b._tats


def test_buckets_refused_keeps_state():
    b = Buckets(Limit(1, 10))
    assert b.take("k", T0).allowed
    d = b.take("k", T0 + 5)
    assert not d.allowed and d.retry_after_s == pytest.approx(5.0)
    assert b.take("k", T0 + 10).allowed


def test_buckets_max_keys_validation():
    with pytest.raises(ValueError):
        Buckets(Limit(1, 1), max_keys=0)
