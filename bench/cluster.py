"""``make bench-cluster``: what cluster mode costs and how it scales on this machine (issue 28).

Two comparisons, each a ratio of paired runs (the median of ``--runs``, with min and max). The
load is spread over ``PROJECTS`` Stripe projects, each with its own key and real transactions
made through the Stripe simulator, as ``make bench`` makes one; every run is a closed loop of
``wrk`` with 64 connections (``requests.lua``: each request its own path and headers):

1. **The engines.** One node on LMDB and one on PostgreSQL (``EDGE_STORE``, cluster mode, a
   throwaway PostgreSQL server with ``fsync`` on, as LMDB syncs each commit), set up, started
   again (so no actor holds what it made), then measured in turn: status GETs, then webhook
   ingest. Figures: PostgreSQL ÷ LMDB.
2. **Three nodes against one**, on that PostgreSQL database, behind HAProxy with the shipped
   configuration (``edge cluster haproxy-config``: the project id in the path hashed over the
   nodes). Each run starts the nodes and HAProxy afresh, has every project served once, warms
   up, measures, then stops them cleanly (a clean stop gives the leases back, so the next set
   takes the projects up at once). Figures: three ÷ one, at peak (closed loop), and at a
   light load (``LIGHT``, open loop with ``bench.loadgen``): what a request costs the nodes and
   PostgreSQL there, where each node's fixed work weighs most, and the latency's p99.

Every node runs on CPU 0 (three nodes share it), and the load generator, PostgreSQL and HAProxy
on CPU 1: three nodes have no more CPU than one, so the second ratio is the cost of splitting
one node's work over three processes, not what a core a node would give (``--spread`` lets the
cluster's nodes run on every CPU instead). Each run records the CPU each part used (and the
rest of the machine's busy time, ``others``: a shared machine's other work) and PostgreSQL's
statements (pg_stat_statements), so the table says what was busy and what a request costs.

Prints a table and writes it as JSON to ``bench/results/cluster-*.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import pwd
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from bench import events, loadgen, shop, wrk
from bench.run import Report, log, machine, print_figures
from bench.servers import SERVER_CPU, Server, every_cpu, pin_load_cpu
from edge.cluster.haproxy import Node, render
from edge.signing import Signer

RESULTS = Path(__file__).resolve().parent / "results"
PROJECTS = 24
TRANSACTIONS = 20  # per project: 4 webhook templates each, 80 distinct events a project
STATUS_TXS = 5  # per project, read in turn by the status runs
NODES = ("n1", "n2", "n3")
ADMIN_TOKEN = "bench-cluster-operator-token"
HAPROXY = shutil.which("haproxy") or "/usr/sbin/haproxy"
PG_BINARIES = Path("/usr/lib/postgresql")
WARM_S = 2.0
# light load, open loop (bench.loadgen): requests a second of each kind, on a few connections
LIGHT = {"status": 100.0, "webhook": 40.0}
LIGHT_CONNECTIONS = 8
CLK_TCK = os.sysconf("SC_CLK_TCK")


# -- the servers around the nodes -------------------------------------------------------------


class Postgres:
    """A throwaway PostgreSQL (Debian's binaries), as tests/support/postgres.py starts one: a
    unix socket only, in a temporary directory; as root it runs as the ``postgres`` user. Unlike
    the tests' it keeps ``fsync`` on: LMDB syncs every commit too, and the comparison is of
    durable commits. pg_stat_statements counts the nodes' statements (its own small cost is in
    PostgreSQL's CPU)."""

    def __init__(self, root: Path) -> None:
        found = sorted(
            (d / "bin" for d in PG_BINARIES.glob("*") if (d / "bin" / "pg_ctl").exists()),
            key=lambda b: int(b.parent.name) if b.parent.name.isdigit() else 0,
        )
        if not found:
            sys.exit(f"no PostgreSQL under {PG_BINARIES} (apt-get install postgresql)")
        self.binaries = found[-1]
        self.root = root
        self.data = root / "data"
        self.socket_dir = root / "socket"
        self._as: list[str] = []

    def start(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:
            user = pwd.getpwnam("postgres")
            os.chown(self.root, user.pw_uid, user.pw_gid)
            self._as = ["runuser", "-u", "postgres", "--"]
        self._run("mkdir", str(self.socket_dir))
        self._run(
            str(self.binaries / "initdb"),
            *("-D", str(self.data), "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync"),
        )
        options = (
            f"-k {self.socket_dir} -c listen_addresses='' -c fsync=on"
            " -c shared_preload_libraries=pg_stat_statements"
        )
        self._run(
            str(self.binaries / "pg_ctl"),
            *("-D", str(self.data), "-l", str(self.root / "log"), "-o", options, "-w", "start"),
        )
        self.sql("postgres", "CREATE DATABASE edge")
        self.sql("edge", "CREATE EXTENSION pg_stat_statements")

    def stop(self) -> None:
        if (self.data / "postmaster.pid").exists():
            self._run(
                str(self.binaries / "pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop"
            )

    def url(self, database: str = "edge") -> str:
        return f"postgresql://postgres@/{database}?host={self.socket_dir}"

    def sql(self, database: str, query: str) -> list[tuple[Any, ...]]:
        import psycopg  # as in edge: loaded only where PostgreSQL is used

        with psycopg.connect(self.url(database), autocommit=True) as conn:
            cursor = conn.execute(query)  # type: ignore[call-overload]
            return cursor.fetchall() if cursor.description else []

    def pids(self) -> list[int]:
        """The postmaster and its children (a backend for each of the nodes' connections)."""
        postmaster = int((self.data / "postmaster.pid").read_text().split()[0])
        return [postmaster, *children(postmaster)]

    def statements(self) -> int:
        """Statements run in the bench's database so far, each a round trip from a node
        (pg_stat_statements: counted as each ends, where the server's own statistics of
        transactions reach the shared counters up to seconds late)."""
        rows = self.sql(
            "edge",
            "SELECT coalesce(sum(calls), 0) FROM pg_stat_statements"
            " WHERE dbid = (SELECT oid FROM pg_database WHERE datname = 'edge')",
        )
        return int(rows[0][0])

    def _run(self, *command: str) -> None:
        done = subprocess.run(
            [*self._as, *command], capture_output=True, text=True, cwd=self.root, check=False
        )
        if done.returncode != 0:
            log_file = self.root / "log"
            tail = log_file.read_text()[-2000:] if log_file.exists() else ""
            raise RuntimeError(f"{' '.join(command)} failed: {done.stderr}{done.stdout}{tail}")


@contextmanager
def running_postgres(root: Path) -> Iterator[Postgres]:
    server = Postgres(root)
    try:
        server.start()
        yield server
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)


@contextmanager
def running_haproxy(where: Path, nodes: Sequence[Node]) -> Iterator[tuple[str, int]]:
    """HAProxy with ``edge cluster haproxy-config``'s configuration in front of ``nodes``: its
    URL and pid. Its per-request log goes nowhere: it would be written on the load CPU and the
    disk PostgreSQL syncs to, in one configuration as in the other."""
    where.mkdir(parents=True, exist_ok=True)
    pins = where / "pins.map"
    pins.write_text("")
    port = free_port()
    config = render(nodes, bind=f"127.0.0.1:{port}", pins_map=pins, admin_socket=where / "sock")
    (where / "haproxy.cfg").write_text(config)
    with open(where / "haproxy.log", "ab") as errors:
        process = subprocess.Popen(
            [HAPROXY, "-db", "-f", str(where / "haproxy.cfg")],
            stdout=subprocess.DEVNULL,
            stderr=errors,
        )
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 15
        while True:
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"haproxy did not serve; see {where / 'haproxy.log'}")
            try:
                if httpx.get(url + "/readyz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.05)  # nothing announces that haproxy listens: look again
        yield url, process.pid
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def stop_all(servers: Sequence[Server], timeout_s: float = 30.0) -> None:
    """SIGTERM to every server at once, then wait for each (each drains and gives its leases
    back in parallel with the others)."""
    for server in servers:
        if server.proc is not None and server.proc.poll() is None:
            server.proc.send_signal(signal.SIGTERM)
    for server in servers:
        server.stop(timeout_s)


# -- CPU accounting ---------------------------------------------------------------------------


def children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def cpu_seconds(pids: Sequence[int]) -> float:
    """User and system CPU of ``pids`` (every thread of each), in seconds."""
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # a backend that ended: its last seconds are lost, a rounding error
        total += int(fields[11]) + int(fields[12])
    return total / CLK_TCK


def wrk_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


# -- the load ---------------------------------------------------------------------------------


@dataclass
class Target:
    """Where a run's requests go (a node, or HAProxy in front of some) and what to account."""

    label: str
    url: str
    nodes: list[Server]
    admins: list[shop.Admin]  # one per node, straight to it (its own stats)
    postgres: Postgres | None = None
    haproxy_pid: int | None = None


@dataclass
class Sample:
    rps: float
    requests: int
    seconds: float
    failures: int
    cpu_s: dict[str, float]  # CPU seconds over the run, per part (and everything else)
    per_commit: float  # tickets a commit of the store writer (a webhook event is one)
    statements: int  # PostgreSQL statements over the run (each a round trip)
    p99_ms: float | None = None  # an open-loop run's (``LIGHT``): its latency's 99th percentile

    def share(self, part: str) -> float:
        """CPU seconds a second: 1.0 is one core busy."""
        return self.cpu_s[part] / self.seconds

    def ms(self, part: str) -> float:
        """Milliseconds of CPU a request: what one more request costs ``part``."""
        return 1000 * self.cpu_s[part] / self.requests if self.requests else 0.0

    @property
    def statements_per_request(self) -> float:
        return self.statements / self.requests if self.requests else 0.0


@dataclass
class Load:
    shops: list[shop.StripeShop]
    bodies: list[list[str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.bodies = [events.templates(s.txs) for s in self.shops]

    def status_pool(self, path: Path) -> Path:
        """Each project's first transactions, projects interleaved, each with its own key."""
        with open(path, "w") as out:
            for i in range(STATUS_TXS):
                for s in self.shops:
                    out.write(f"GET\t{s.status_path(i)}\t\tAuthorization: Bearer {s.test_key}\n")
        return path

    def webhook_pool(self, path: Path, count: int) -> Path:
        """``count`` signed deliveries, each with its own event id, projects interleaved."""
        each = -(-count // len(self.shops))
        streams = [events.deliveries(b, each, shop.WEBHOOK_SECRET) for b in self.bodies]
        with open(path, "wb") as out:
            for _ in range(each):
                for s, stream in zip(self.shops, streams, strict=True):
                    signature, body = next(stream)
                    out.write(
                        b"POST\t%s\t%s\tStripe-Signature: %s\n"
                        % (s.webhook_path.encode(), body, signature.encode())
                    )
        return path


PARTS = ("nodes", "postgres", "haproxy", "wrk", "others")


def cpu_now(target: Target, pg_pids: Sequence[int]) -> dict[str, float]:
    """CPU seconds so far of each part; ``others``: the machine's (every CPU's) busy time that
    is none of them nor this process: other work on a shared machine, or the hypervisor's."""
    parts = {
        "nodes": cpu_seconds([n.pid for n in target.nodes]),
        "postgres": cpu_seconds(pg_pids),
        "haproxy": cpu_seconds([target.haproxy_pid] if target.haproxy_pid else []),
        "wrk": wrk_cpu_seconds(),
    }
    me = resource.getrusage(resource.RUSAGE_SELF)
    parts["others"] = machine_busy_seconds() - sum(parts.values()) - me.ru_utime - me.ru_stime
    return parts


def machine_busy_seconds() -> float:
    # /proc/stat's first line: user nice system idle iowait irq softirq steal ..., every CPU
    fields = [int(f) for f in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    return (sum(fields) - fields[3] - fields[4]) / CLK_TCK


def measure(target: Target, pool: Path, duration_s: float, rate: float | None = None) -> Sample:
    """A closed-loop run of ``wrk`` on ``pool``, or with ``rate`` an open-loop one at that
    many requests a second (``bench.loadgen``: a child process like ``wrk``, its CPU in the
    ``wrk`` column, the load generator's)."""
    pg_pids = target.postgres.pids() if target.postgres else []
    before = [a.stats() for a in target.admins]
    statements_before = target.postgres.statements() if target.postgres else 0
    cpu_before = cpu_now(target, pg_pids)
    p99_ms = None
    if rate is None:
        result = wrk.run(target.url, pool=pool, script=wrk.REQUESTS_LUA, duration_s=duration_s)
        rps, requests, failures = result.rps, result.requests, result.non_2xx + result.socket_errors
    else:
        opened = loadgen.open_loop(
            target.url, "/", rate, duration_s, connections=LIGHT_CONNECTIONS, requests=pool
        )
        rps, requests, failures = opened["achieved_rps"], opened["ok"], opened["errors"]
        p99_ms = opened["p99_ms"]
    cpu_after = cpu_now(target, pg_pids)
    statements_after = target.postgres.statements() if target.postgres else 0
    after = [a.stats() for a in target.admins]
    commits = sum(a["commits"] - b["commits"] for a, b in zip(after, before, strict=True))
    tickets = sum(
        a["ticketsCommitted"] - b["ticketsCommitted"] for a, b in zip(after, before, strict=True)
    )
    return Sample(
        rps=rps,
        requests=requests,
        seconds=duration_s,
        failures=failures,
        cpu_s={part: max(0.0, cpu_after[part] - cpu_before[part]) for part in PARTS},
        per_commit=tickets / commits if commits else 0.0,
        statements=statements_after - statements_before,
        p99_ms=p99_ms,
    )


def describe(sample: Sample) -> str:
    cpu = ", ".join(f"{part} {sample.share(part):.2f}" for part in PARTS if sample.cpu_s[part])
    text = f"{sample.rps:8.1f} req/s  (CPU a second: {cpu}"
    if sample.per_commit:
        text += f"; {sample.per_commit:.1f} tickets/commit"
    if sample.statements:
        text += f"; {sample.statements_per_request:.2f} PostgreSQL statements/request"
    if sample.p99_ms is not None:
        text += f"; p99 {sample.p99_ms:.1f} ms"
    if sample.failures:
        text += f"; {sample.failures} FAILED"
    return text + ")"


class Runner:
    """Status and webhook runs against targets, their samples kept by (target, kind)."""

    def __init__(self, work: Path, duration_s: float) -> None:
        self.work = work
        self.duration_s = duration_s
        self.samples: dict[tuple[str, str], list[Sample]] = {}
        self.expected: dict[str, float] = {}  # webhook rate seen, per target: the pool's size

    def run(
        self,
        target: Target,
        load: Load,
        kind: str,
        duration_s: float | None = None,
        rate: float | None = None,
    ) -> Sample:
        seconds = duration_s or self.duration_s
        if kind == "status":
            pool = load.status_pool(self.work / "status-pool.txt")
        else:
            # enough deliveries that none is sent twice (a duplicate is answered from the dedup
            # index, cheaper than an event): an open loop sends rate x seconds; a closed one,
            # 2.5 times what this target took so far
            seen = self.expected.get(target.label, 2_000)
            count = int(rate * seconds) + 1 if rate else max(5_000, int(seen * seconds * 2.5))
            pool = load.webhook_pool(self.work / "webhook-pool.txt", count)
        sample = measure(target, pool, seconds, rate)
        if kind == "webhook" and rate is None:
            self.expected[target.label] = max(self.expected.get(target.label, 0), sample.rps)
        return sample

    def counted(self, target: Target, load: Load, kind: str, rate: float | None = None) -> Sample:
        """A measured run, kept under ``kind`` (``kind`` and " light" for an open-loop run at
        ``rate``)."""
        sample = self.run(target, load, kind, rate=rate)
        named = light(kind) if rate else kind
        self.samples.setdefault((target.label, named), []).append(sample)
        log(f"    {target.label:<10} {named:<14}{describe(sample)}")
        return sample

    def warm(
        self, target: Target, load: Load, kinds: Sequence[str] = ("status", "webhook")
    ) -> None:
        for kind in kinds:
            sample = self.run(target, load, kind, WARM_S)
            log(f"    {target.label:<10} {kind:<8}{describe(sample)}  warm-up, not counted")

    def rps(self, label: str, kind: str) -> list[float]:
        return [s.rps for s in self.samples[(label, kind)]]


def served(url: str, load: Load) -> None:
    """Every project answers a status read (taking its lease where it is not held yet)."""
    with httpx.Client(base_url=url, timeout=10) as http:
        for s in load.shops:
            deadline = time.monotonic() + 30
            while True:
                answer = http.get(
                    s.status_path(), headers={"Authorization": f"Bearer {s.test_key}"}
                )
                if answer.status_code == 200:
                    break
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{s.project_id}: {answer.status_code} {answer.text}")
                time.sleep(0.1)  # a retryable 503 while a lease changes hands: ask again


# -- the two comparisons ----------------------------------------------------------------------


def node_env(
    config: Path, pg: Postgres | None, node_id: str, keys: dict[str, str]
) -> dict[str, str]:
    """A node's environment; on PostgreSQL, a cluster node's, with the cluster's ``keys``."""
    env = {"EDGE_CONFIG": str(config), "EDGE_ADMIN_TOKEN": ADMIN_TOKEN}
    if pg is not None:
        env |= {
            "EDGE_STORE": pg.url(),
            "EDGE_NODE_ID": node_id,
            **keys,
            "EDGE_TRUSTED_PROXIES": "127.0.0.1",
        }
    return env


def engines(
    report: Report,
    runner: Runner,
    work: Path,
    pg: Postgres,
    config: Path,
    keys: dict[str, str],
    runs: int,
) -> Load:
    """One node on LMDB against one on PostgreSQL. Returns the PostgreSQL node's load (its
    projects, in the database the cluster runs reuse)."""
    lmdb_node = Server.node(work / "lmdb", work / "lmdb.log", node_env(config, None, "", keys))
    pg_node = Server.node(work / "n1", work / "n1.log", node_env(config, pg, "n1", keys))
    loads = []
    with lmdb_node, pg_node:
        for label, node in (("lmdb", lmdb_node), ("postgresql", pg_node)):
            started = time.monotonic()
            with shop.Admin(node.url, work, ADMIN_TOKEN) as admin:
                loads.append(Load(shop.stripe_shops(admin, PROJECTS, TRANSACTIONS)))
            log(
                f"setup: {PROJECTS} Stripe projects of {TRANSACTIONS} checkouts on {label} "
                f"({time.monotonic() - started:.0f} s)"
            )
    # Started again, the nodes hold nothing of what they set up in memory: each event's
    # transaction is read from the store, as for a webhook that comes after the project's actor
    # went idle, or to another node.
    with lmdb_node, pg_node:
        targets = []
        for label, node, postgres in (("lmdb", lmdb_node, None), ("postgresql", pg_node, pg)):
            admin = shop.Admin(node.url, work, ADMIN_TOKEN)
            targets.append(Target(label, node.url, [node], [admin], postgres))
        for target, load in zip(targets, loads, strict=True):
            runner.warm(target, load)
            tx = load.shops[0].status_path()
            answer = httpx.get(
                target.url + tx, headers={"Authorization": f"Bearer {load.shops[0].test_key}"}
            )
            # the events are about the bench's own checkouts: they move them
            assert answer.json()["status"] != "pending", "the webhook events match nothing"
        for i in range(runs):
            log(f"engines, run {i + 1}/{runs}")
            for kind in ("status", "webhook"):
                for target, load in zip(targets, loads, strict=True):
                    runner.counted(target, load, kind)
        for target in targets:
            for admin in target.admins:
                admin.close()
    for kind, unit in (("status", "req/s"), ("webhook", "events/s")):
        on_lmdb, on_pg = runner.rps("lmdb", kind), runner.rps("postgresql", kind)
        report.add(f"lmdb_{kind}", unit, on_lmdb, "one node, direct")
        report.add(f"postgresql_{kind}", unit, on_pg, "one node, direct, fsync on")
        report.add(
            f"postgresql_vs_lmdb_{kind}",
            "x",
            [p / m for p, m in zip(on_pg, on_lmdb, strict=True)],
            "paired runs",
        )
    return loads[1]


def cluster(
    report: Report,
    runner: Runner,
    work: Path,
    pg: Postgres,
    config: Path,
    keys: dict[str, str],
    load: Load,
    runs: int,
    cpus: str,
) -> None:
    """Three nodes against one behind HAProxy, on the same database, started afresh each run,
    the nodes on ``cpus``."""
    spread: list[dict[str, int]] = []
    for i in range(runs):
        log(f"cluster, run {i + 1}/{runs}")
        for names in (NODES[:1], NODES):
            label = f"{len(names)} node" + ("s" if len(names) > 1 else "")
            nodes = [
                Server.node(work / name, work / f"{name}.log", node_env(config, pg, name, keys))
                for name in names
            ]
            started = time.monotonic()
            with ExitStack() as stack:
                stack.callback(stop_all, nodes)
                for node in nodes:
                    node.cpus = cpus
                    node.start()
                listed = [
                    Node(n, s.url.removeprefix("http://"))
                    for n, s in zip(names, nodes, strict=True)
                ]
                url, haproxy_pid = stack.enter_context(
                    running_haproxy(work / f"haproxy-{len(names)}", listed)
                )
                admins = [shop.Admin(n.url, work, ADMIN_TOKEN) for n in nodes]
                for admin in admins:
                    stack.callback(admin.close)
                served(url, load)
                log(
                    f"    {label}: started, every project served "
                    f"({time.monotonic() - started:.1f} s)"
                )
                target = Target(label, url, nodes, admins, pg, haproxy_pid)
                # served() has just read a status of every project
                runner.warm(target, load, ("webhook",))
                for kind in ("status", "webhook"):
                    runner.counted(target, load, kind)
                for kind, rate in LIGHT.items():
                    runner.counted(target, load, kind, rate)
                if len(names) > 1:
                    spread.append(
                        {
                            str(owner): int(count)
                            for owner, count in pg.sql(
                                "edge",
                                "SELECT owner, count(*) FROM leases"
                                " WHERE expires_at > clock_timestamp() GROUP BY owner",
                            )
                        }
                    )
                    log(f"    projects per node: {spread[-1]}")
    where = "nodes on CPU 0" if cpus == str(SERVER_CPU) else f"nodes on CPUs {cpus}"
    for kind, unit in (("status", "req/s"), ("webhook", "events/s")):
        one, three = runner.rps("1 node", kind), runner.rps("3 nodes", kind)
        report.add(f"haproxy_1_node_{kind}", unit, one, f"PostgreSQL, behind HAProxy, {where}")
        report.add(f"haproxy_3_nodes_{kind}", unit, three, f"PostgreSQL, behind HAProxy, {where}")
        report.add(
            f"3_nodes_vs_1_{kind}",
            "x",
            [t / o for t, o in zip(three, one, strict=True)],
            "paired runs",
        )
    for kind, rate in LIGHT.items():
        # what a request costs the cluster (its nodes and PostgreSQL) at a light load, where a
        # node's fixed work (heartbeats, queue polls) weighs most: one node's ÷ three nodes'
        single = runner.samples[("1 node", light(kind))]
        split = runner.samples[("3 nodes", light(kind))]
        report.add(
            f"3_nodes_vs_1_light_{kind}_cpu_efficiency",
            "x",
            [_cluster_ms(o) / _cluster_ms(t) for o, t in zip(single, split, strict=True)],
            f"paired runs at {rate:.0f} req/s open loop: 1 node's CPU a request (nodes and"
            " PostgreSQL) ÷ 3 nodes'",
        )
        for label, samples in (("1_node", single), ("3_nodes", split)):
            report.add(
                f"{label}_light_{kind}_p99_ms",
                "ms",
                [s.p99_ms or 0.0 for s in samples],
                f"at {rate:.0f} req/s, behind HAProxy",
            )
    report.extra["projects_per_node"] = spread


def light(kind: str) -> str:
    """The name a kind's open-loop runs at ``LIGHT`` are kept under."""
    return f"{kind} light"


def _cluster_ms(sample: Sample) -> float:
    return sample.ms("nodes") + sample.ms("postgres")


# -- the table --------------------------------------------------------------------------------


def samples_json(runner: Runner) -> dict[str, Any]:
    return {
        f"{label} {kind}": [
            {
                "rps": round(s.rps, 1),
                "requests": s.requests,
                "failures": s.failures,
                "cpu_per_s": {part: round(s.share(part), 3) for part in PARTS},
                "cpu_ms_per_request": {part: round(s.ms(part), 3) for part in PARTS},
                "tickets_per_commit": round(s.per_commit, 2),
                "postgresql_statements_per_request": round(s.statements_per_request, 3),
            }
            for s in samples
        ]
        for (label, kind), samples in runner.samples.items()
    }


def print_table(report: Report, runner: Runner, info: dict[str, Any]) -> None:
    print_figures(report, info, name=30, unit=8)
    log("medians of the runs: CPU ms a request; CPU seconds a second (1.0: a core busy)")
    log(
        f"{'':<20} {'node ms':>8} {'PG ms':>6} | {'nodes':>5} {'PG':>5} {'HAProxy':>7} "
        f"{'wrk':>5} {'others':>6} | {'PG stmts/req':>12} {'events/commit':>13} {'failed':>6}"
    )
    for (label, kind), samples in runner.samples.items():

        def median(get: Any, samples: list[Sample] = samples) -> float:
            return statistics.median(get(s) for s in samples)

        # a status run commits only the readiness probes: no events a commit to speak of
        per_commit = f"{median(lambda s: s.per_commit):.1f}" if kind == "webhook" else "-"
        shares = " ".join(
            f"{median(lambda s, p=part: s.share(p)):>{width}.2f}"
            for part, width in zip(PARTS, (5, 5, 7, 5, 6), strict=True)
        )
        log(
            f"{label + ' ' + kind:<20} {median(lambda s: s.ms('nodes')):>8.3f} "
            f"{median(lambda s: s.ms('postgres')):>6.3f} | {shares} | "
            f"{median(lambda s: s.statements_per_request):>12.2f} {per_commit:>13} "
            f"{sum(s.failures for s in samples):>6}"
        )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Cluster mode: PostgreSQL against LMDB, three nodes against one."
    )
    parser.add_argument("--runs", type=int, default=3, help="paired runs per ratio")
    parser.add_argument("--seconds", type=float, default=10.0, help="seconds per measured run")
    parser.add_argument("--only", choices=("engines", "cluster"), action="append")
    parser.add_argument(
        "--spread",
        action="store_true",
        help="the cluster's nodes may run on every CPU (shared with the load, PostgreSQL and "
        "HAProxy), not on CPU 0 alone",
    )
    parser.add_argument(
        "--keep", action="store_true", help="keep the work dir (the nodes' and HAProxy's logs)"
    )
    args = parser.parse_args(argv)
    # a SIGTERM unwinds like Ctrl-C, so PostgreSQL, HAProxy and the nodes are stopped on the way
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    for tool in ("wrk", HAPROXY):
        if shutil.which(tool) is None:
            sys.exit(f"{tool} is not installed (apt-get install wrk haproxy)")
    # PostgreSQL and HAProxy, started from here, inherit the load CPU
    pin_load_cpu()
    RESULTS.mkdir(parents=True, exist_ok=True)
    work = RESULTS / f"work-cluster-{time.strftime('%Y%m%d-%H%M%S')}"
    work.mkdir()
    info = machine()
    log(
        f"machine: {info['cpu']}, {info['cores']} cores; nodes on CPU 0; load, PostgreSQL "
        "and HAProxy on CPU 1"
    )
    report = Report()
    runner = Runner(work, args.seconds)
    config = shop.write_config(work / "edge.toml")
    (work / "signing").mkdir()
    # the same on every node: each opens the project secrets the others sealed, and a node with
    # another signing key than the store's refuses to start
    keys = {
        "EDGE_SECRET_KEY": os.urandom(32).hex(),
        "EDGE_SIGNING_KEY": Signer.load(work / "signing").pem(),
    }
    started = time.monotonic()
    # as root the directory becomes the postgres user's, who must reach it: one in /tmp, as the
    # tests do, not under the repository
    with running_postgres(Path(tempfile.mkdtemp(prefix="edge-bench-pg-"))) as pg:
        log(f"PostgreSQL {pg.binaries.parent.name} at {pg.socket_dir} (fsync on)")
        if not args.only or "engines" in args.only:
            log("== one node: LMDB and PostgreSQL")
            load = engines(report, runner, work, pg, config, keys, args.runs)
        else:
            with Server.node(work / "n1", work / "n1.log", node_env(config, pg, "n1", keys)) as n:
                admin = shop.Admin(n.url, work, ADMIN_TOKEN)
                load = Load(shop.stripe_shops(admin, PROJECTS, TRANSACTIONS))
                admin.close()
        if not args.only or "cluster" in args.only:
            log("== behind HAProxy: three nodes and one, on PostgreSQL")
            cpus = every_cpu() if args.spread else str(SERVER_CPU)
            cluster(report, runner, work, pg, config, keys, load, args.runs, cpus)
    print_table(report, runner, info)
    result = {
        "machine": info,
        "figures": [f.row() for f in report.figures.values()],
        "samples": samples_json(runner),
        "details": {
            **report.extra,
            "projects": PROJECTS,
            "transactions_per_project": TRANSACTIONS,
            "connections": wrk.CONNECTIONS,
            "seconds": args.seconds,
        },
        "elapsed_s": round(time.monotonic() - started, 1),
        "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    out = RESULTS / f"cluster-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    shutil.copyfile(out, RESULTS / "cluster-latest.json")
    log(f"\nwritten {out} ({result['elapsed_s']:.0f} s)")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
