"""``make bench``: the node against the ceiling of its own stack, in one run.

Every server (the node, a bare Quart-Trio app, a raw ASGI app, the raw app answering after a
durable commit; all on the same Hypercorn config) runs pinned to one CPU and every load
generator on the other. Peak runs alternate baseline and node, so a noisy neighbour hits both
alike. Each figure is the median of ``--runs`` runs, shown with min and max; the final table is
printed and written as JSON to ``bench/results/``.

Stages: peak throughput (wrk, closed loop, 64 connections) -> latency at half the node's peak
(open loop; each kind beside its floors at the same rate in the same minute) -> py-spy profiles
of missed throughput/latency targets -> memory with 10,000 projects touched, then after idle
eviction -> start-up with 1,000,000 stored events.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import sysconfig
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from bench import events, hiccups, loadgen, profile, shop, wrk
from bench.servers import LOAD_CPU, SERVER_CPU, Server, pin_load_cpu

RESULTS = Path(__file__).resolve().parent / "results"
FILLED_STORE = RESULTS / "store-1m"
FILLED_EVENTS = 1_000_000
FILL_VERSION = 1  # bump when bench.fill writes something different
TRANSACTIONS = 500
PROJECTS = 10_000
IDLE_S = 15.0

TARGETS = {
    "status_vs_quart_get": (">=", 1.0),
    "webhook_vs_quart_post": (">=", 0.85),
    "webhook_3_endpoints_vs_alone": (">=", 0.9),
    "events_per_commit": (">=", 8.0),
    # issue 35: a flat tail, within twice the bare ASGI app's in the same minute at the same rate
    "status_p99_ms": ("<=", 2.0),
    "webhook_p99_ms": ("<=", 5.0),
    "status_p99_vs_bare_asgi": ("<=", 2.0),
    "webhook_p99_vs_bare_asgi": ("<=", 2.0),
    "rss_10k_projects_mb": ("<=", 150.0),
    "startup_1m_events_s": ("<=", 2.0),
}
# issue 35 asks for the absolute tails "on a quiet machine": a machine whose own stalls
# (bench.hiccups, watched on both CPUs before and after each run) would make a request arriving
# at a random moment wait over QUIET_STALL_MS one time in a hundred is not one, and those two
# targets are shown, not judged, on it
QUIET_ONLY = {"status_p99_ms": "status", "webhook_p99_ms": "webhook"}
QUIET_STALL_MS = 0.5
STALL_WATCH_S = 3.0


@dataclass
class Figure:
    name: str
    unit: str
    runs: list[float]
    note: str = ""

    @property
    def median(self) -> float:
        return statistics.median(self.runs) if self.runs else float("nan")

    def row(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "unit": self.unit,
            "median": round(self.median, 3),
            "min": round(min(self.runs), 3) if self.runs else None,
            "max": round(max(self.runs), 3) if self.runs else None,
            "runs": [round(r, 3) for r in self.runs],
            "note": self.note,
        }


@dataclass
class Report:
    figures: dict[str, Figure] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    def add(self, name: str, unit: str, runs: Sequence[float], note: str = "") -> Figure:
        figure = Figure(name, unit, list(runs), note)
        self.figures[name] = figure
        return figure

    def say(self, name: str) -> None:
        f = self.figures[name]
        print(
            f"  {name:<28} {f.median:>10.2f} {f.unit:<8} "
            f"(min {min(f.runs):.2f}, max {max(f.runs):.2f}; n={len(f.runs)}) {f.note}",
            flush=True,
        )


def log(text: str) -> None:
    print(text, flush=True)


def interpreter() -> str:
    """The CPython behind the venv, and how it was built where its configuration says so: a
    build without profile-guided and link-time optimization (pyenv's default) runs the same
    Python code markedly slower than one with (python.org's container images, Debian's)."""
    base = os.path.realpath(getattr(sys, "_base_executable", sys.executable))
    flags = str(sysconfig.get_config_var("CONFIG_ARGS") or "")
    said = [name for flag, name in _BUILD_FLAGS if flag in flags]
    build = ", ".join(said) if said else "no PGO or LTO stated in its configuration"
    return f"{base} ({platform.python_version()}; {build})"


_BUILD_FLAGS = (("--enable-optimizations", "PGO"), ("--with-lto", "LTO"))


def machine() -> dict[str, Any]:
    model = "unknown"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    versions = {}
    for package in ("hypercorn", "quart", "quart-trio", "trio", "h11", "lmdb", "msgpack"):
        try:
            from importlib.metadata import version

            versions[package] = version(package)
        except Exception:
            versions[package] = "?"
    wrk_version = subprocess.run(["wrk", "-v"], capture_output=True, text=True).stdout.split("\n")[
        0
    ]
    return {
        "cpu": model,
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "interpreter": interpreter(),
        "kernel": platform.release(),
        "load_avg_at_start": os.getloadavg(),
        "wrk": wrk_version.strip(),
        "packages": versions,
    }


# -- peak throughput --------------------------------------------------------------------------


def peak_and_latency(
    report: Report,
    work: Path,
    runs: int,
    latency_runs: int,
    duration_s: float,
    latency_s: float,
    do_profile: bool,
) -> None:
    config = shop.write_config(work / "edge.toml")
    data = work / "node-peak"
    node = Server.node(data, work / "node-peak.log", {"EDGE_CONFIG": str(config)})
    quart, asgi = Server.baseline("quart", work), Server.baseline("asgi", work)
    durable, flush = Server.baseline("durable", work), Server.baseline("flush", work)
    with node, quart, asgi, durable, flush:
        admin = shop.Admin(node.url, data)
        log(f"setup: a Stripe project with {TRANSACTIONS} checkouts through the simulator")
        bench_shop = shop.stripe_shop(admin, TRANSACTIONS)
        bodies = events.templates(bench_shop.txs)
        status_url = node.url + bench_shop.status_path()
        webhook_url = node.url + bench_shop.webhook_path
        key_header = {"Authorization": f"Bearer {bench_shop.test_key}"}
        check = httpx.get(status_url, headers=key_header)
        assert check.status_code == 200, check.text
        baseline_pool = events.write_pool(
            work / "baseline-pool.txt", bodies, 20_000, shop.WEBHOOK_SECRET
        )

        def webhook_run(expected_rps: float) -> tuple[wrk.WrkResult, dict[str, float]]:
            pool_size = max(10_000, int(expected_rps * duration_s * 2.5))
            pool = events.write_pool(
                work / "webhook-pool.txt", bodies, pool_size, shop.WEBHOOK_SECRET
            )
            before = admin.stats()
            result = wrk.run(webhook_url, pool=pool, duration_s=duration_s)
            after = admin.stats()
            commits = after["commits"] - before["commits"]
            stored = after["ticketsCommitted"] - before["ticketsCommitted"]
            return result, {
                "pool": pool_size,
                "stored": stored,
                "commits": commits,
                "per_commit": stored / commits if commits else 0.0,
                "duplicates": max(0, result.requests - pool_size),
            }

        log("warm-up (not counted)")
        for url, kw in (
            (quart.url + "/", {}),
            (asgi.url + "/", {}),
            (status_url, {"headers": key_header}),
            (quart.url + "/", {"pool": baseline_pool}),
            (asgi.url + "/", {"pool": baseline_pool}),
        ):
            wrk.run(url, duration_s=2, **kw)  # type: ignore[arg-type]
        warm, _ = webhook_run(2000)
        # the events are about the bench's own checkouts: they move them (not stored unmatched)
        moved = httpx.get(status_url, headers=key_header).json()["status"]
        assert moved != "pending", "the bench's webhook events do not match its transactions"

        series: dict[str, list[float]] = {
            k: [] for k in ("quart_get", "asgi_get", "status", "quart_post", "asgi_post", "webhook")
        }
        per_commit: list[float] = []
        stored: list[float] = []
        duplicates, failures = 0.0, 0
        expected: float = warm.rps
        for i in range(runs):
            log(f"peak run {i + 1}/{runs}")
            for name, url, kw in (
                ("quart_get", quart.url + "/", {}),
                ("asgi_get", asgi.url + "/", {}),
                ("status", status_url, {"headers": key_header}),
                ("quart_post", quart.url + "/", {"pool": baseline_pool}),
                ("asgi_post", asgi.url + "/", {"pool": baseline_pool}),
            ):
                result = wrk.run(url, duration_s=duration_s, **kw)  # type: ignore[arg-type]
                failures += result.non_2xx + result.socket_errors
                series[name].append(result.rps)
                log(
                    f"    {name:<11} {result.rps:8.1f} req/s  "
                    f"(closed-loop p50 {result.p50_ms:.1f} ms)"
                )
            result, info = webhook_run(expected)
            expected = max(expected, result.rps)
            failures += result.non_2xx + result.socket_errors
            series["webhook"].append(result.rps)
            per_commit.append(info["per_commit"])
            stored.append(info["stored"])
            duplicates += info["duplicates"]
            log(
                f"    {'webhook':<11} {result.rps:8.1f} req/s  ({info['stored']} events stored in "
                f"{info['commits']} commits = {info['per_commit']:.1f}/commit; "
                f"{info['duplicates']} duplicates)"
            )

        for name, unit in (
            ("quart_get", "req/s"),
            ("asgi_get", "req/s"),
            ("status", "req/s"),
            ("quart_post", "req/s"),
            ("asgi_post", "req/s"),
            ("webhook", "events/s"),
        ):
            report.add(name, unit, series[name])
        pairs = lambda a, b: [x / y for x, y in zip(series[a], series[b], strict=True)]  # noqa: E731
        report.add("status_vs_quart_get", "x", pairs("status", "quart_get"), "paired runs")
        report.add("status_vs_asgi_get", "x", pairs("status", "asgi_get"), "paired runs")
        report.add("webhook_vs_quart_post", "x", pairs("webhook", "quart_post"), "paired runs")
        report.add("webhook_vs_asgi_post", "x", pairs("webhook", "asgi_post"), "paired runs")
        report.add("events_per_commit", "events", per_commit, f"{wrk.CONNECTIONS} connections")
        report.extra["peak"] = {
            "non_2xx_or_socket_errors": failures,
            "webhook_duplicates": duplicates,
            "webhook_events_stored": stored,
            "connections": wrk.CONNECTIONS,
            "wrk_threads": wrk.THREADS,
            "duration_s": duration_s,
            "transactions": TRANSACTIONS,
        }

        _notified_ingest(report, work, admin, bench_shop, webhook_run, runs)

        log("latency at half of the node's peak (open loop)")
        status_rate = report.figures["status"].median / 2
        webhook_rate = report.figures["webhook"].median / 2
        # the machine's own tail: the bare ASGI app at the same rate, in the same minute; at
        # most half of its own peak, which the node's status reads outrun (its fast lane): an
        # overloaded baseline's p99 is its queue, not the machine's tail
        floor_rate = min(status_rate, report.figures["asgi_get"].median / 2)
        # a webhook's floors at its own rate: the bare ASGI app taking the same POSTs, the
        # durable app answering each after its group's commit in the node's store, and the
        # one-flush app after one write and one flush a group (the least any receiver that
        # acknowledges after its disk pays: the disk's own tail)
        post_rate = min(webhook_rate, report.figures["asgi_post"].median / 2)
        runs_of: defaultdict[str, list[dict[str, Any]]] = defaultdict(list)
        for i in range(latency_runs):
            pool = events.write_pool(
                work / "latency-pool.txt",
                bodies,
                int(webhook_rate * latency_s) + 10,
                shop.WEBHOOK_SECRET,
            )
            key = [f"Authorization: Bearer {bench_shop.test_key}"]
            stalls = worst = _machine_stalls(report)
            for kind, url, path, rate, headers, body_pool in (
                ("bare_asgi", asgi.url, "/", floor_rate, [], None),
                ("status", node.url, bench_shop.status_path(), status_rate, key, None),
                ("bare_asgi_post", asgi.url, "/", post_rate, [], pool),
                ("one_flush_floor", flush.url, "/", post_rate, [], pool),
                ("durable_floor", durable.url, "/", post_rate, [], pool),
                ("webhook", node.url, bench_shop.webhook_path, webhook_rate, [], pool),
            ):
                run = _open_loop(url, path, rate, latency_s, headers, body_pool)
                runs_of[kind].append(run)
                if run["errors"]:
                    log(
                        f"    {kind}: {run['errors']} requests failed or were never sent (of "
                        f"{run['sent']} sent): its percentiles count them as never answered"
                    )
                after = _machine_stalls(report)
                run["machine_stall_p99_ms"] = max(stalls, after)
                stalls, worst = after, max(worst, after)
            log(
                f"    run {i + 1}: machine's own stall p99 up to {worst} ms; "
                f"status p99 {runs_of['status'][-1]['p99_ms']} ms "
                f"(bare ASGI {runs_of['bare_asgi'][-1]['p99_ms']}), webhook p99 "
                f"{runs_of['webhook'][-1]['p99_ms']} ms (bare ASGI POST "
                f"{runs_of['bare_asgi_post'][-1]['p99_ms']}, one-flush floor "
                f"{runs_of['one_flush_floor'][-1]['p99_ms']}, durable floor "
                f"{runs_of['durable_floor'][-1]['p99_ms']})"
            )
        for kind, rate in (
            ("status", status_rate),
            ("webhook", webhook_rate),
            ("bare_asgi", floor_rate),
            ("bare_asgi_post", post_rate),
            ("one_flush_floor", post_rate),
            ("durable_floor", post_rate),
        ):
            note = f"at {rate:.0f} req/s"
            for q in ("p50", "p99", "p999"):
                report.add(f"{kind}_{q}_ms", "ms", [r[f"{q}_ms"] for r in runs_of[kind]], note)
            stalled = [r["machine_stall_p99_ms"] for r in runs_of[kind]]
            report.add(f"{kind}_machine_stall_p99_ms", "ms", stalled, "around its runs")
            report.extra[f"{kind}_latency_runs"] = runs_of[kind]
        for name, kind, floor in (
            ("status_p99_vs_bare_asgi", "status", "bare_asgi"),
            ("webhook_p99_vs_bare_asgi", "webhook", "bare_asgi_post"),
            ("webhook_p99_vs_durable_floor", "webhook", "durable_floor"),
            ("webhook_p99_vs_one_flush_floor", "webhook", "one_flush_floor"),
            # how near bare ASGI any acknowledgement after a flush can come on this disk
            ("one_flush_floor_p99_vs_bare_asgi", "one_flush_floor", "bare_asgi_post"),
        ):
            ratios = [
                node_run["p99_ms"] / floor_run["p99_ms"]
                for node_run, floor_run in zip(runs_of[kind], runs_of[floor], strict=True)
            ]
            report.add(name, "x", ratios, "paired runs, same minute")

        if do_profile:
            _profile_misses(
                report, work, node, status_url, key_header, webhook_url, bodies, duration_s
            )
        report.extra["writer_stats"] = admin.stats()
        admin.close()


def _notified_ingest(
    report: Report,
    work: Path,
    admin: shop.Admin,
    bench_shop: shop.StripeShop,
    webhook_run: Any,
    runs: int,
) -> None:
    """Webhook ingest while every event is also owed to 3 notification endpoints (CONTRACT 4.8),
    paired run by run with ingest alone (the same endpoints switched off), in turn, so a machine
    that slows down affects both sides: notifications must not slow ingest."""
    log("webhook ingest with 3 notification endpoints (a receiver answering 200), paired")
    receiver = Server(
        "receiver",
        [sys.executable, "-m", "bench.baselines", "asgi", str(work / "receiver.json")],
        work / "receiver.json",
        work / "receiver.log",
    )
    with receiver:
        address = receiver.url.replace("127.0.0.1", "localhost") + "/hooks"
        base = f"/api/manage/projects/{bench_shop.project_id}/endpoints"
        made = [admin.ok("POST", base, {"url": address, "mode": "test"}, 201) for _ in range(3)]

        def switch(enabled: bool) -> None:
            for endpoint in made:
                path = f"{base}/{endpoint['endpointId']}"
                admin.ok("PATCH", path, {"enabled": enabled})

        alone, notified = [], []
        expected = report.figures["webhook"].median
        for i in range(runs):
            switch(False)
            alone.append(webhook_run(expected)[0].rps)
            switch(True)
            notified.append(webhook_run(expected)[0].rps)
            log(
                f"    pair {i + 1}: webhook alone {alone[-1]:8.1f}, "
                f"with 3 endpoints {notified[-1]:8.1f} events/s"
            )
        for endpoint in made:  # the latency runs below measure ingest alone
            admin.ok("DELETE", f"{base}/{endpoint['endpointId']}")
    report.add("webhook_3_endpoints", "events/s", notified)
    report.add(
        "webhook_3_endpoints_vs_alone",
        "x",
        [n / a for n, a in zip(notified, alone, strict=True)],
        "paired runs, alone and notified in turn",
    )


def _open_loop(
    url: str,
    path: str,
    rate: float,
    duration_s: float,
    headers: list[str],
    pool: Path | None = None,
) -> dict[str, Any]:
    # The pools the bench just wrote are dirty pages: the kernel would write them out some
    # seconds later, in the middle of the run, and a sync of the server's would wait for them
    # (ext4's journal commit flushes other files' newly placed data too): a stall of the
    # bench's own making charged to the server under test.
    os.sync()
    return loadgen.open_loop(
        url, path, rate, duration_s, connections=wrk.CONNECTIONS, headers=headers, pool=pool
    )


def _machine_stalls(report: Report) -> float:
    """The wait one random arrival in a hundred would have for a CPU the machine took, the
    worse of the server's and the load generator's, over ``STALL_WATCH_S`` (kept in detail)."""
    cpus = [SERVER_CPU, LOAD_CPU] if (os.cpu_count() or 1) > 1 else [SERVER_CPU]
    rows = hiccups.machine_stalls(STALL_WATCH_S, cpus)
    report.extra.setdefault("machine_stalls", []).append(rows)
    return max(row["p99_delay_ms"] for row in rows)


def _profile_misses(
    report: Report,
    work: Path,
    node: Server,
    status_url: str,
    key_header: dict[str, str],
    webhook_url: str,
    bodies: list[str],
    duration_s: float,
) -> None:
    if not profile.available():
        report.extra["profiles"] = "py-spy is not installed in the venv"
        return
    profiles = {}
    status_missed = any(_judged_miss(report, n) for n in ("status_vs_quart_get", "status_p99_ms"))
    webhook_missed = any(
        _judged_miss(report, n)
        for n in ("webhook_vs_quart_post", "events_per_commit", "webhook_p99_ms")
    )
    if status_missed:
        log("profiling the node under status load (py-spy)")
        profiles["status"] = profile.record(
            node.pid,
            RESULTS / "profile-status.txt",
            lambda: wrk.run(status_url, headers=key_header, duration_s=duration_s + 2),
        )
    if webhook_missed:
        log("profiling the node under webhook load (py-spy)")
        pool = events.write_pool(work / "profile-pool.txt", bodies, 30_000, shop.WEBHOOK_SECRET)
        profiles["webhook"] = profile.record(
            node.pid,
            RESULTS / "profile-webhook.txt",
            lambda: wrk.run(webhook_url, pool=pool, duration_s=duration_s + 2),
        )
    report.extra["profiles"] = profiles


def _judged_miss(report: Report, name: str) -> bool:
    """A target missed on a machine that could judge it (``_unjudged``)."""
    return _missed(report, name) and _unjudged(report, name) is None


def _unjudged(report: Report, name: str) -> str | None:
    """Why an absolute tail target cannot be judged on this run's machine, if it cannot."""
    kind = QUIET_ONLY.get(name)
    stalls = report.figures.get(f"{kind}_machine_stall_p99_ms") if kind else None
    if stalls is None or stalls.median <= QUIET_STALL_MS:
        return None
    return (
        f"not a quiet machine: its own stalls' p99 {stalls.median:g} ms "
        f"(quiet: at most {QUIET_STALL_MS:g})"
    )


def _missed(report: Report, name: str) -> bool:
    figure = report.figures.get(name)
    if figure is None:
        return False
    op, bound = TARGETS[name]
    return not (figure.median >= bound if op == ">=" else figure.median <= bound)


# -- memory -----------------------------------------------------------------------------------


def memory(report: Report, work: Path, runs: int) -> None:
    before, touched, evicted, actors, anon, anon_evicted = [], [], [], [], [], []
    for i in range(runs):
        data = work / f"node-memory-{i}"
        env = {
            "EDGE_ACTOR_IDLE_S": str(IDLE_S),
            "EDGE_CONFIG": str(shop.write_config(work / "edge.toml")),
        }
        with Server.node(data, work / f"node-memory-{i}.log", env) as node:
            admin = shop.Admin(node.url, data)
            time.sleep(0.5)
            before.append(node.rss_mb())
            started = time.monotonic()
            shop.touch_projects(node.url, admin.token, PROJECTS)
            touched.append(node.rss_mb())
            anon.append(node.rss_mb("RssAnon"))
            live = admin.stats()["actors"]
            actors.append(live)
            log(
                f"    run {i + 1}: {before[-1]:.1f} MB at start, "
                f"{touched[-1]:.1f} MB with {live} live actors "
                f"({time.monotonic() - started:.1f} s to create and touch {PROJECTS} projects)"
            )
            deadline = time.monotonic() + IDLE_S * 4
            while admin.stats()["actors"] and time.monotonic() < deadline:
                time.sleep(1)
            remaining = admin.stats()["actors"]
            evicted.append(node.rss_mb())
            anon_evicted.append(node.rss_mb("RssAnon"))
            log(
                f"    run {i + 1}: {evicted[-1]:.1f} MB after idle eviction "
                f"({remaining} actors left)"
            )
            admin.close()
        shutil.rmtree(data, ignore_errors=True)
    report.add("rss_empty_mb", "MB", before, "fresh node")
    report.add("rss_10k_projects_mb", "MB", touched, f"{PROJECTS} projects each served a request")
    report.add(
        "rss_anon_10k_projects_mb",
        "MB",
        anon,
        "of which anonymous (heap); the rest is mapped LMDB pages",
    )
    report.add("rss_after_eviction_mb", "MB", evicted, f"EDGE_ACTOR_IDLE_S={IDLE_S:g}")
    report.add("rss_anon_after_eviction_mb", "MB", anon_evicted, "anonymous (heap)")
    report.extra["memory_live_actors"] = actors


# -- start-up ---------------------------------------------------------------------------------


def filled_store(work: Path) -> dict[str, str]:
    """The cached data dir with 1,000,000 events (made once, kept under bench/results/)."""
    marker = FILLED_STORE / "bench-fill.json"
    if marker.exists():
        info = json.loads(marker.read_text())
        if info.get("version") == FILL_VERSION and info.get("events") == FILLED_EVENTS:
            return dict(info)
    shutil.rmtree(FILLED_STORE, ignore_errors=True)
    log(f"filling a store with {FILLED_EVENTS:,} events (once; cached in {FILLED_STORE})")
    with Server.node(FILLED_STORE, work / "node-fill.log") as node:
        admin = shop.Admin(node.url, FILLED_STORE)
        project_id = admin.project("Filled", tier=None)
        admin.product(project_id)
        admin.provider(
            project_id,
            "manual",
            {
                "enabled": True,
                "test": {
                    "mailingAddress": {
                        "name": "Shop Ltd",
                        "lines": ["1 Main St", "London"],
                        "country": "GB",
                    }
                },
            },
        )
        key = admin.key(project_id, "test")
        created = admin.ok(
            "POST",
            f"/api/checkout/manual/{project_id}",
            {"productId": "book"},
            201,
            headers={"Authorization": f"Bearer {key}"},
        )
        admin.close()
    started = time.monotonic()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.fill",
            str(FILLED_STORE),
            project_id,
            created["txId"],
            str(FILLED_EVENTS),
        ],
        check=True,
        timeout=1200,
    )
    info = {
        "version": FILL_VERSION,
        "events": FILLED_EVENTS,
        "project": project_id,
        "key": key,
        "tx": created["txId"],
        "fill_s": round(time.monotonic() - started, 1),
    }
    marker.write_text(json.dumps(info) + "\n")
    return info


def startup(report: Report, work: Path, runs: int) -> None:
    info = filled_store(work)
    size_mb = (FILLED_STORE / "store" / "data.mdb").stat().st_size / 2**20
    status_path = f"/status/{info['project']}/{info['tx']}"
    headers = {"Authorization": f"Bearer {info['key']}"}
    filled = [
        _time_to_first_answer(
            Server.node(FILLED_STORE, work / "node-startup.log"), status_path, headers
        )
        for _ in range(runs)
    ]
    empty = []
    for i in range(runs):
        data = work / f"node-empty-{i}"
        empty.append(
            _time_to_first_answer(
                Server.node(data, work / "node-empty.log"), "/.well-known/cm-signing-keys", {}
            )
        )
        shutil.rmtree(data, ignore_errors=True)
    report.add(
        "startup_1m_events_s",
        "s",
        filled,
        f"{FILLED_EVENTS:,} events, data.mdb {size_mb:,.0f} MB, page cache warm",
    )
    report.add("startup_empty_s", "s", empty, "empty store, for comparison")


def _time_to_first_answer(node: Server, path: str, headers: dict[str, str]) -> float:
    """Seconds from creating the process to the first 200 on ``path``."""
    node.start()
    try:
        with httpx.Client(timeout=5.0) as http:
            while True:
                try:
                    if http.get(node.url + path, headers=headers).status_code == 200:
                        return time.perf_counter() - node.started_at
                except httpx.TransportError:
                    pass
                if time.perf_counter() - node.started_at > 60:
                    raise RuntimeError("the node did not answer within 60 s")
    finally:
        node.stop()


# -- the table --------------------------------------------------------------------------------


def verdicts(report: Report) -> list[dict[str, Any]]:
    rows = []
    for name, (op, bound) in TARGETS.items():
        figure = report.figures.get(name)
        if figure is None:
            continue
        row: dict[str, Any] = {
            "target": f"{name} {op} {bound:g}",
            "median": round(figure.median, 3),
            "pass": not _missed(report, name),
        }
        why = _unjudged(report, name)
        if why is not None:
            row["pass"] = None
            row["why"] = why
        rows.append(row)
    return rows


def print_figures(report: Report, info: dict[str, Any], *, name: int = 36, unit: int = 6) -> None:
    """The machine, then a line a figure: median, min and max (``name``, ``unit``: the
    widths of those columns)."""
    log("")
    log(f"machine: {info['cpu']}, {info['cores']} cores, Python {info['python']}, {info['wrk']}")
    log(f"load average at start: {', '.join(f'{x:.2f}' for x in info['load_avg_at_start'])}")
    log(f"{'figure':<{name}} {'median':>10} {'min':>10} {'max':>10}  {'unit':<{unit}} note")
    for figure in report.figures.values():
        row = figure.row()
        log(
            f"{row['name']:<{name}} {row['median']:>10.2f} {row['min']:>10.2f} "
            f"{row['max']:>10.2f}  {row['unit']:<{unit}} {row['note']}"
        )
    log("")


def print_table(report: Report, info: dict[str, Any]) -> None:
    print_figures(report, info)
    for verdict in verdicts(report):
        said = {True: "PASS", False: "FAIL", None: "N/A "}[verdict["pass"]]
        why = f"  ({verdict['why']})" if "why" in verdict else ""
        log(f"{said}  {verdict['target']:<36} median {verdict['median']}{why}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Benchmark the node against its stack's ceiling.")
    parser.add_argument("--runs", type=int, default=3, help="runs per latency and start-up figure")
    parser.add_argument(
        "--peak-runs", type=int, default=3, help="paired runs per throughput figure"
    )
    # 20 s or more: one stall of a shared machine must not decide a figure
    parser.add_argument("--duration", type=float, default=20.0, help="seconds per peak run")
    parser.add_argument(
        "--latency-duration", type=float, default=20.0, help="seconds per open-loop run"
    )
    parser.add_argument("--memory-runs", type=int, default=1)
    parser.add_argument("--no-profile", action="store_true")
    parser.add_argument("--only", choices=("peak", "memory", "startup"), action="append")
    args = parser.parse_args(argv)
    if shutil.which("wrk") is None:
        sys.exit("wrk is not installed (make bench installs it: apt-get install wrk)")
    pin_load_cpu()
    RESULTS.mkdir(parents=True, exist_ok=True)
    work = RESULTS / f"work-{time.strftime('%Y%m%d-%H%M%S')}"
    work.mkdir()
    info = machine()
    log(f"machine: {info['cpu']}, {info['cores']} cores; servers on CPU 0, load on CPU 1")
    report = Report()
    stages: dict[str, Callable[[], None]] = {
        "peak": lambda: peak_and_latency(
            report,
            work,
            args.peak_runs,
            args.runs,
            args.duration,
            args.latency_duration,
            not args.no_profile,
        ),
        "memory": lambda: memory(report, work, args.memory_runs),
        "startup": lambda: startup(report, work, args.runs),
    }
    started = time.monotonic()
    for name, stage in stages.items():
        if args.only and name not in args.only:
            continue
        log(f"== {name}")
        stage_started = time.monotonic()
        stage()
        log(f"   ({time.monotonic() - stage_started:.0f} s)")
    print_table(report, info)
    result = {
        "machine": info,
        "figures": [f.row() for f in report.figures.values()],
        "targets": verdicts(report),
        "details": report.extra,
        "elapsed_s": round(time.monotonic() - started, 1),
        "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    out = RESULTS / f"bench-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    shutil.copyfile(out, RESULTS / "latest.json")
    log(f"\nwritten {out}")
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
