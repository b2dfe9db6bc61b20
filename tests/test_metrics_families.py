"""The loop's own counters and histogram (edge.metrics) in Prometheus' text format, as
``prometheus_client``'s own would write them: a histogram's buckets cumulative, a value on a
bound counted in that bound's bucket, and ``+Inf``, ``_count`` and ``_sum`` for every label."""

from __future__ import annotations

import pytest
import trio
from prometheus_client import CollectorRegistry, Histogram, generate_latest

from edge.metrics import LoopCounter, LoopHistogram, Metrics

BOUNDS = (0.001, 0.01, 1)


def samples(registry: CollectorRegistry) -> set[str]:
    return {
        line
        for line in generate_latest(registry).decode().splitlines()
        if line and not line.startswith("#") and "_created" not in line
    }


def test_the_histogram_writes_what_prometheus_clients_would():
    ours, theirs = CollectorRegistry(), CollectorRegistry()
    loop = LoopHistogram("t_seconds", "t", "route", BOUNDS)
    ours.register(loop)
    reference = Histogram("t_seconds", "t", ["route"], buckets=BOUNDS, registry=theirs)
    for route, value in [("/a", 0.001), ("/a", 0.0005), ("/a", 0.5), ("/b", 7.0), ("/a", 2)]:
        loop.observe(route, value)
        reference.labels(route).observe(value)
    assert samples(ours) == samples(theirs)
    assert 't_seconds_bucket{le="0.001",route="/a"} 2.0' in samples(ours)


def test_a_counter_counts_by_its_labels():
    registry = CollectorRegistry()
    counter = LoopCounter("edge_things", "things", ("provider", "status"))
    registry.register(counter)
    counter.inc(("stripe", 200))
    counter.inc(("stripe", 200), 2)
    counter.inc(("paypal", 401))
    assert samples(registry) == {
        'edge_things_total{provider="stripe",status="200"} 3.0',
        'edge_things_total{provider="paypal",status="401"} 1.0',
    }


def test_a_second_family_of_the_same_name_is_refused():
    registry = CollectorRegistry()
    registry.register(LoopHistogram("edge_things_seconds", "t", "route", BOUNDS))
    registry.register(LoopCounter("edge_things", "things", ("provider",)))
    with pytest.raises(ValueError, match="Duplicated"):
        registry.register(LoopCounter("edge_things", "again", ("provider",)))
    with pytest.raises(ValueError, match="Duplicated"):
        registry.register(Histogram("edge_things_seconds", "again", registry=None))


async def test_a_scrape_lets_the_loop_through_between_its_collectors():
    metrics = Metrics()
    for n in range(40):
        metrics.request(f"/route-{n}", 200, 0.002)
        metrics.webhook("stripe", "accepted")
    turns = 0

    async def another_task() -> None:
        nonlocal turns
        while True:
            await trio.lowlevel.checkpoint()
            turns += 1

    async with trio.open_nursery() as nursery:
        nursery.start_soon(another_task)
        await trio.lowlevel.checkpoint()
        before = turns
        text = await metrics.text()
        nursery.cancel_scope.cancel()
    # written in one go, no other task would have run until the whole text was made
    assert turns - before >= 10
    # and it is the text the registry would write at once
    assert text == generate_latest(metrics.registry)
    assert b'edge_webhooks_total{outcome="accepted",provider="stripe"} 40.0' in text
