"""What ``GET /metrics`` shows (CONTRACT 4.9), in Prometheus' text format: requests by route
and status with latency, webhook outcomes by provider and reason, changes learned by webhook
and by asking the provider (and the asking's outcomes), notification outcomes, and at
scrape time the writer's commits and events per commit, actors alive and queue depths.

Each node has its own registry, so several nodes in one process (tests) do not share counts.
A scrape is written a collector at a time, the loop let through between them: the whole of it
took 1 to 3.6 ms of the loop's CPU in one go, a stall of every request in flight each time
Prometheus came (issue 35: nothing holds the loop over 1 ms)."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import trio
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

from edge.domain.routes import route_of

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
ROUTES_KEPT = 4096


class Metrics:
    def __init__(self) -> None:
        self.registry = _Registry()
        # counted on every request, in plain numbers (``LoopCounter``, ``LoopHistogram``)
        self._requests = LoopCounter("edge_requests", "HTTP requests answered", ("route", "status"))
        self._latency = LoopHistogram(
            "edge_request_seconds",
            "Time to answer a request",
            "route",
            (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10, 30),
        )
        self._webhooks = LoopCounter(
            "edge_webhooks",
            "Provider webhook deliveries by outcome (accepted, duplicate, or the refusal reason)",
            ("provider", "outcome"),
        )
        self._learned = LoopCounter(
            "edge_events_learned",
            "Changes of payments the node learned, by provider and how: webhook, or sync (by"
            " asking the provider, when its webhook never came)",
            ("provider", "source"),
        )
        for collector in (self._requests, self._latency, self._webhooks, self._learned):
            self.registry.register(collector)
        self._asked = Counter(
            "edge_provider_asks",
            "Times the node asked a provider about a payment (sync), by outcome",
            ["provider", "outcome"],
            registry=self.registry,
        )
        self._notifications = Counter(
            "edge_notifications",
            "Notification attempts to merchants' endpoints by outcome",
            ["outcome"],
            registry=self.registry,
        )
        self._loop_lag = Histogram(
            "edge_loop_lag_seconds",
            "How late the event loop ran a task due every 0.1 s: what any request waited for"
            " the loop; over 0.1 s, the node stood still (client deadlines do not count it)",
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5),
            registry=self.registry,
        )
        self._gc_pauses = Histogram(
            "edge_gc_pause_seconds",
            "The collector's pauses of the event loop's thread (its CPU time), by generation"
            " (counted only when EDGE_LONG_STEP_MS is set)",
            ["generation"],
            buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5),
            registry=self.registry,
        )
        self._long_steps = Counter(
            "edge_loop_long_steps",
            "Task steps that kept the loop's thread busy longer than EDGE_LONG_STEP_MS (counted"
            " only when it is set), by task",
            ["task"],
            registry=self.registry,
        )
        self._stepped_aside = Counter(
            "edge_methods_stepped_aside",
            "Times a project's payment method stopped being offered because its provider kept"
            " failing checkouts on its side (5xx, no answer), by provider and mode",
            ["provider", "mode"],
            registry=self.registry,
        )
        self._back = Counter(
            "edge_methods_back",
            "Times a method stepped aside was offered again (a probe or a checkout worked)",
            ["provider", "mode"],
            registry=self.registry,
        )
        self._scraped: _Scraped | None = None
        self._routes: dict[str, str] = {}  # path -> its route: a project's webhooks share one

    def request(self, path: str, status: int, seconds: float) -> None:
        route = self._routes.get(path)
        if route is None:
            if len(self._routes) >= ROUTES_KEPT:
                self._routes.clear()  # ids in paths (a status read's) are many; routes few
            route = self._routes[path] = route_of(path)
        self._requests.inc((route, status))
        self._latency.observe(route, seconds)

    def loop_lag(self, seconds: float) -> None:
        self._loop_lag.observe(seconds)

    def gc_pause(self, generation: int, seconds: float) -> None:
        self._gc_pauses.labels(str(generation)).observe(seconds)

    def long_step(self, task: str, seconds: float) -> None:
        self._long_steps.labels(task).inc()

    def method_health(self, provider: str, mode: str, *, failing: bool) -> None:
        (self._stepped_aside if failing else self._back).labels(provider, mode).inc()

    def webhook(self, provider: str, outcome: str) -> None:
        self._webhooks.inc((provider, outcome))

    def learned(self, provider: str, source: str, count: int = 1) -> None:
        self._learned.inc((provider, source), count)

    def asked(self, provider: str, outcome: str) -> None:
        self._asked.labels(provider, outcome).inc()

    def notification(self, outcome: str) -> None:
        self._notifications.labels(outcome).inc()

    def watch(self, read: Callable[[], Awaitable[dict[str, Any]]]) -> None:
        """Figures read when scraped: ``read()`` gives commits, tickets, actors, queue depths."""
        self._scraped = _Scraped(read)
        self.registry.register(self._scraped)

    async def text(self) -> bytes:
        if self._scraped is not None:
            await self._scraped.read()
        parts = []
        for alone in self.registry.parts:
            parts.append(generate_latest(alone))
            await trio.lowlevel.checkpoint()
        return b"".join(parts)


class _Registry(CollectorRegistry):
    """The node's registry (one name, one family), which also keeps each collector in a
    registry of its own, in order: ``Metrics.text`` writes them one at a time."""

    def __init__(self) -> None:
        super().__init__(auto_describe=True)
        self.parts: list[CollectorRegistry] = []

    def register(self, collector: Collector) -> None:
        super().register(collector)
        alone = CollectorRegistry(auto_describe=False)
        alone.register(collector)
        self.parts.append(alone)


class _Scraped(Collector):
    """The figures of the last ``read()``: the registry collects without awaiting, so
    ``Metrics.text`` awaits the read (the queue depths are store reads) just before."""

    def __init__(self, read: Callable[[], Awaitable[dict[str, Any]]]) -> None:
        self._read = read
        self._now: dict[str, Any] | None = None

    async def read(self) -> None:
        self._now = await self._read()

    def collect(self) -> Iterator[Metric]:
        now = self._now
        if now is None:
            return
        yield CounterMetricFamily(
            "edge_commits", "LMDB commits by the store writer", now["commits"]
        )
        yield CounterMetricFamily(
            "edge_committed_writes", "Writes (tickets) the commits carried", now["tickets"]
        )
        yield GaugeMetricFamily(
            "edge_writes_per_commit", "Writes per commit so far", now["perCommit"]
        )
        yield CounterMetricFamily(
            "edge_commit_seconds",
            "Seconds the store engine's commits took in the writer's thread (writes and syncs);"
            " over edge_commits, a commit's mean",
            now["engineSeconds"],
        )
        yield CounterMetricFamily(
            "edge_commit_round_trip_seconds",
            "Seconds from the writer's hand-off of each commit to its thread until the event"
            " loop had it back: beyond edge_commit_seconds, the thread hand-offs",
            now["roundTripSeconds"],
        )
        yield GaugeMetricFamily("edge_actors", "Project actors alive", now["actors"])
        yield GaugeMetricFamily(
            "edge_followups_pending", "Follow-ups owed to providers", now["followUps"]
        )
        yield GaugeMetricFamily(
            "edge_notifications_pending", "Notifications owed to endpoints", now["notifications"]
        )

    def describe(self) -> Iterator[Metric]:
        return iter(())


class LoopCounter(Collector):
    """A labelled counter for the event loop's thread alone, counted in a plain dict:
    ``prometheus_client``'s takes a lock on every increment and looks its child up under
    another, a cost on every request for a guard against threads the loop does not have."""

    def __init__(self, name: str, documentation: str, labels: tuple[str, ...]) -> None:
        self._name = name
        self._documentation = documentation
        self._labels = labels
        self._counts: dict[tuple[Any, ...], float] = {}

    def inc(self, labels: tuple[Any, ...], amount: float = 1) -> None:
        counts = self._counts
        counts[labels] = counts.get(labels, 0) + amount

    def collect(self) -> Iterator[Metric]:
        family = CounterMetricFamily(self._name, self._documentation, labels=self._labels)
        for labels, count in list(self._counts.items()):
            family.add_metric([str(label) for label in labels], count)
        yield family

    def describe(self) -> Iterator[Metric]:
        # its name, so the registry refuses a second family of the same name
        return self.collect()


class LoopHistogram(Collector):
    """A histogram with one label, for the event loop's thread alone (as ``LoopCounter``):
    an observation adds to one bucket and to the sum; buckets are made cumulative when
    scraped."""

    def __init__(
        self, name: str, documentation: str, label: str, bounds: tuple[float, ...]
    ) -> None:
        self._name = name
        self._documentation = documentation
        self._label = label
        self._bounds = bounds
        # label -> the count in each bucket (the last past every bound), then the sum
        self._cells: dict[str, list[float]] = {}

    def observe(self, label: str, value: float) -> None:
        cells = self._cells.get(label)
        if cells is None:
            cells = self._cells[label] = [0] * (len(self._bounds) + 2)
        cells[bisect_left(self._bounds, value)] += 1
        cells[-1] += value

    def collect(self) -> Iterator[Metric]:
        family = HistogramMetricFamily(self._name, self._documentation, labels=(self._label,))
        edges = [*(floatToGoString(bound) for bound in self._bounds), "+Inf"]
        for label, cells in list(self._cells.items()):
            running, buckets = 0.0, []
            for edge, count in zip(edges, cells[:-1], strict=True):
                running += count
                buckets.append((edge, running))
            family.add_metric([label], buckets, cells[-1])
        yield family

    def describe(self) -> Iterator[Metric]:
        return self.collect()
