"""``make bench-peers``: the node against what a merchant would write instead (issue 35).

Runs ``python -m bench.peers [--runs N] [--seconds S] [--peer NAME ...] [--keep]``; prints a
table of ratios and writes it, with every run's figures, as JSON to
``bench/results/peers-*.json``.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx

from bench import shop, wrk
from bench.peers import apps, env
from bench.peers.databases import (
    PeersPostgres,
    count_node_events,
    count_sqlite,
    create_sqlite,
    running_postgres,
)
from bench.peers.measure import Sample, Target, measure
from bench.peers.workload import Pool, status_pool, webhook_pool
from bench.run import Report, log, machine
from bench.servers import Server, pin_load_cpu

RESULTS = Path(__file__).resolve().parent.parent / "results"
ORDERS = 500  # the shop's checkouts, as in make bench
WARM_S = 2.0
KINDS = ("status", "webhook")
EDGE = "edge"
ERROR_LINE = re.compile(r"^[\w.]+(Error|Exception): ")


def setup_peer(
    name: str,
    installed: env.PeersEnv,
    work: Path,
    stack: ExitStack,
    postgres: PeersPostgres | None,
    bench_shop: shop.StripeShop,
    orders: list[tuple[str, str, int, str]],
    projects_file: Path,
) -> Target:
    """The peer's database, made and filled, and the peer started on it."""
    settings = {"PROJECTS_FILE": str(projects_file), "STRIPE_API_KEY": shop.SECRET_KEY}
    if name == "fastapi-sqlite":
        path = create_sqlite(work / "shop.sqlite3", orders)
        settings["DATABASE_PATH"] = str(path)

        def stored() -> int:
            return count_sqlite(path, "events")

    else:
        assert postgres is not None, "a peer on PostgreSQL without a server"
        pg, database = postgres, name.replace("-", "_")
        settings["DATABASE_URL"] = pg.create(database, orders)

        def stored() -> int:
            return pg.count(database, "events")

    headers = {"Authorization": f"Bearer {bench_shop.test_key}"}
    server = apps.peer(name, installed, work, settings, bench_shop.status_path(), headers)
    stack.enter_context(server)
    return Target(name, server, stored, None if name == "fastapi-sqlite" else postgres)


class Pairs:
    """The paired runs: for each peer and kind, a run of the peer and one of the node on the
    same pool, in turn (which goes first alternates from run to run)."""

    def __init__(self, work: Path, bench_shop: shop.StripeShop, seconds: float) -> None:
        self.work = work
        self.shop = bench_shop
        self.seconds = seconds
        self.expected: dict[str, float] = {}  # webhook rate seen, per server: the pool's size
        self.pairs: dict[tuple[str, str], list[tuple[Sample, Sample]]] = {}
        self.pools = 0

    def pool(self, kind: str, labels: Sequence[str], seconds: float) -> Pool:
        if kind == "status":
            return status_pool(self.work / "status-pool.txt", self.shop)
        # enough deliveries that the faster server does not run out (wrk would start again)
        rate = max(self.expected.get(label, 2_000.0) for label in labels)
        self.pools += 1
        count = max(3_000, int(rate * seconds * 1.6))
        return webhook_pool(self.work / "webhook-pool.txt", self.shop, count, self.pools)

    def run(self, target: Target, kind: str, pool: Pool, seconds: float) -> Sample:
        sample = measure(target, kind, pool, seconds)
        if kind == "webhook":
            self.expected[target.label] = max(self.expected.get(target.label, 0.0), sample.rps)
        return sample

    def warm(self, targets: Sequence[Target]) -> None:
        for target in targets:
            for kind in KINDS:
                sample = self.run(target, kind, self.pool(kind, [target.label], WARM_S), WARM_S)
                log(f"    {target.label:<17} {kind:<8}{sample.describe()}  warm-up")

    def pair(self, peer: Target, node: Target, kind: str, node_first: bool) -> None:
        pool = self.pool(kind, [peer.label, node.label], self.seconds)
        order = (node, peer) if node_first else (peer, node)
        done = {t.label: self.run(t, kind, pool, self.seconds) for t in order}
        for target in order:
            log(f"    {target.label:<17} {kind:<8}{done[target.label].describe()}")
        self.pairs.setdefault((peer.label, kind), []).append((done[peer.label], done[EDGE]))


def figures(report: Report, pairs: Pairs) -> list[dict[str, Any]]:
    """The figures of each peer and kind into ``report``; the table's rows."""
    rows = []
    for (peer, kind), runs in pairs.pairs.items():
        unit = "req/s" if kind == "status" else "events/s"
        name = f"{peer} {kind}"
        report.add(f"{name}: {peer}", unit, [p.rps for p, _ in runs])
        report.add(f"{name}: edge", unit, [e.rps for _, e in runs], "paired with the above")
        throughput = report.add(
            f"{name}: edge ÷ peer, req/s", "x", [e.rps / p.rps for p, e in runs], "paired"
        )
        report.add(f"{name}: {peer} CPU ms/req", "ms", [p.ms() for p, _ in runs], "app + DB")
        report.add(f"{name}: edge CPU ms/req", "ms", [e.ms() for _, e in runs])
        cpu = report.add(
            f"{name}: peer ÷ edge, CPU/req", "x", [p.ms() / e.ms() for p, e in runs], "paired"
        )
        app_only = report.add(
            f"{name}: peer ÷ edge, CPU/req without the DB",
            "x",
            [p.ms(with_db=False) / e.ms() for p, e in runs],
            "paired",
        )
        rows.append(
            {
                "peer": peer,
                "kind": kind,
                "peer_rps": round(statistics.median(p.rps for p, _ in runs), 1),
                "edge_rps": round(statistics.median(e.rps for _, e in runs), 1),
                "edge_over_peer_rps": throughput.row(),
                "peer_cpu_ms": round(statistics.median(p.ms() for p, _ in runs), 3),
                "peer_app_cpu_ms": round(
                    statistics.median(p.ms(with_db=False) for p, _ in runs), 3
                ),
                "edge_cpu_ms": round(statistics.median(e.ms() for _, e in runs), 3),
                "peer_over_edge_cpu": cpu.row(),
                "peer_over_edge_cpu_without_db": app_only.row(),
                "stored_as_acknowledged": all(p.stored_ok and e.stored_ok for p, e in runs),
                "edge_failures": sum(e.failures for _, e in runs),
                "peer_non_2xx": sum(p.non_2xx for p, _ in runs),
                "peer_socket_errors": sum(p.socket_errors for p, _ in runs),
            }
        )
    return rows


def checks(row: dict[str, Any]) -> str:
    """The checks of a row's runs in a few words."""
    said = []
    if not row["stored_as_acknowledged"]:
        said.append("STORED ≠ ACKNOWLEDGED")
    if row["edge_failures"]:
        said.append(f"EDGE FAILED {row['edge_failures']}")
    if row["peer_non_2xx"] or row["peer_socket_errors"]:
        said.append(
            f"peer: {row['peer_non_2xx']} non-2xx, {row['peer_socket_errors']} socket errors"
        )
    return "; ".join(said) or "ok"


def print_rows(rows: list[dict[str, Any]]) -> None:
    log("")
    log(
        f"{'peer':<17} {'kind':<8} {'peer/s':>8} {'edge/s':>8} {'edge÷peer':>10} "
        f"{'peer ms':>8} {'(app)':>7} {'edge ms':>8} {'peer÷edge CPU':>14} {'(no DB)':>8}  checks"
    )
    for row in rows:
        log(
            f"{row['peer']:<17} {row['kind']:<8} {row['peer_rps']:>8.0f} {row['edge_rps']:>8.0f} "
            f"{row['edge_over_peer_rps']['median']:>10.2f} {row['peer_cpu_ms']:>8.3f} "
            f"{row['peer_app_cpu_ms']:>7.3f} {row['edge_cpu_ms']:>8.3f} "
            f"{row['peer_over_edge_cpu']['median']:>14.2f} "
            f"{row['peer_over_edge_cpu_without_db']['median']:>8.2f}  "
            f"{checks(row)}"
        )
    log("ratios: medians of paired runs; CPU ms a request: the server's process and its database")


def paid_orders(targets: Sequence[Target], bench_shop: shop.StripeShop) -> dict[str, int]:
    """Orders no longer pending at each server, read through its status route."""
    headers = {"Authorization": f"Bearer {bench_shop.test_key}"}
    paid = {}
    for target in targets:
        with httpx.Client(base_url=target.server.url, headers=headers, timeout=10) as http:
            paid[target.label] = sum(
                http.get(bench_shop.status_path(i)).json()["status"] != "pending"
                for i in range(len(bench_shop.txs))
            )
    return paid


def errors_logged(log_file: Path) -> dict[str, int]:
    """The exceptions a server's log ends its tracebacks with, and how often."""
    found: dict[str, int] = {}
    if log_file.exists():
        for line in log_file.read_text(errors="replace").splitlines():
            if ERROR_LINE.match(line):
                found[line] = found.get(line, 0) + 1
    return found


def versions(installed: env.PeersEnv, postgres: PeersPostgres | None) -> dict[str, str]:
    """The peers' stacks, as installed."""
    packages = ("fastapi", "starlette", "uvicorn", "uvloop", "httptools", "stripe", "psycopg")
    script = (
        "import importlib.metadata as m, json, sqlite3; print(json.dumps({**{p: m.version(p)"
        f" for p in {packages!r}}}, 'sqlite': sqlite3.sqlite_version}}))"
    )
    found = json.loads(
        subprocess.run(
            [str(installed.python), "-c", script], capture_output=True, text=True, check=True
        ).stdout
    )
    node = subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip()
    found["node"] = node
    for package in ("express", "stripe", "pg"):
        meta = json.loads((installed.node_modules / package / "package.json").read_text())
        found[f"npm {package}"] = meta["version"]
    if postgres is not None:
        found["postgresql"] = postgres.binaries.parent.name
    return found


def measure_all(
    peers: Sequence[str], installed: env.PeersEnv, work: Path, runs: int, seconds: float
) -> tuple[Pairs, dict[str, int], dict[str, str]]:
    """Everything measured: the node with its shop, PostgreSQL, the peers on the shop's orders,
    then the warm-up and the paired runs. The runs, the orders paid at each server, the
    versions of the peers' stacks."""
    with ExitStack() as stack:
        node_data = work / "node"
        node = Server.node(
            node_data, work / "node.log", {"EDGE_CONFIG": str(shop.write_config(work / "e.toml"))}
        )
        stack.enter_context(node)
        admin = stack.enter_context(shop.Admin(node.url, node_data))
        log(f"setup: the node's Stripe shop with {ORDERS} checkouts, through the simulator")
        bench_shop = shop.stripe_shop(admin, ORDERS)
        project = bench_shop.project_id
        orders = [
            (tx["id"], project, tx["amount"], tx["currency"].lower()) for tx in bench_shop.txs
        ]
        projects_file = work / "projects.json"
        projects_file.write_text(
            json.dumps(
                {project: {"api_key": bench_shop.test_key, "webhook_secret": shop.WEBHOOK_SECRET}}
            )
        )
        postgres = None
        if any(p.endswith("-postgres") for p in peers):
            # as root its directory becomes the postgres user's: in /tmp, not the repository
            root = Path(tempfile.mkdtemp(prefix="edge-bench-peers-pg-"))
            postgres = stack.enter_context(running_postgres(root))
            log(f"PostgreSQL {postgres.binaries.parent.name} at {postgres.socket_dir} (fsync on)")
        edge = Target(EDGE, node, lambda: count_node_events(node_data, project))
        targets = [
            setup_peer(name, installed, work, stack, postgres, bench_shop, orders, projects_file)
            for name in peers
        ]
        log(f"peers up: {', '.join(t.label for t in targets)}")
        pairs = Pairs(work, bench_shop, seconds)
        log("warm-up (not counted)")
        pairs.warm([edge, *targets])
        for i in range(runs):
            log(f"run {i + 1}/{runs}")
            for target in targets:
                for kind in KINDS:
                    pairs.pair(target, edge, kind, node_first=i % 2 == 1)
        paid = paid_orders([edge, *targets], bench_shop)
        log(f"orders paid by the events, of {ORDERS}: {paid}")
        stack_versions = versions(installed, postgres)
    return pairs, paid, stack_versions


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="The node against what merchants write instead.")
    parser.add_argument("--runs", type=int, default=3, help="paired runs per peer and kind")
    parser.add_argument("--seconds", type=float, default=10.0, help="seconds per measured run")
    parser.add_argument("--peer", choices=apps.PEERS, action="append", help="only these peers")
    parser.add_argument("--keep", action="store_true", help="keep the work dir (the logs)")
    args = parser.parse_args(argv)
    peers = args.peer or list(apps.PEERS)
    # a SIGTERM unwinds like Ctrl-C, so PostgreSQL and the servers are stopped on the way
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    for tool in ("wrk", "node"):
        if shutil.which(tool) is None:
            sys.exit(f"{tool} is not installed (make bench-peers installs it with apt-get)")
    installed = env.ensure()
    pin_load_cpu()  # PostgreSQL is pinned to the servers' CPU when it starts
    RESULTS.mkdir(parents=True, exist_ok=True)
    work = RESULTS / f"work-peers-{time.strftime('%Y%m%d-%H%M%S')}"
    work.mkdir()
    info = machine()
    log(
        f"machine: {info['cpu']}, {info['cores']} cores; every server and PostgreSQL on CPU 0, "
        f"wrk on CPU 1; load average {', '.join(f'{x:.2f}' for x in info['load_avg_at_start'])}"
    )
    log(f"CPython of the node and the FastAPI peers: {info['interpreter']}")
    started = time.monotonic()
    pairs, paid, stack_versions = measure_all(peers, installed, work, args.runs, args.seconds)
    report = Report()
    rows = figures(report, pairs)
    print_rows(rows)
    # a peer's errors are a finding about the peer (its log says what they were); the node's,
    # or events stored other than acknowledged by anyone, or an order left unpaid, fail the bench
    checks_ok = all(
        row["stored_as_acknowledged"] and not row["edge_failures"] for row in rows
    ) and all(n == ORDERS for n in paid.values())
    result = {
        "machine": info,
        "versions": stack_versions,
        "peers": {name: apps.DESCRIPTIONS[name] for name in peers},
        "table": rows,
        "figures": [f.row() for f in report.figures.values()],
        "samples": {
            f"{peer} {kind}": [{"peer": p.row(), "edge": e.row()} for p, e in runs]
            for (peer, kind), runs in pairs.pairs.items()
        },
        "orders_paid": paid,
        "checks_ok": checks_ok,
        "peer_errors_logged": {name: errors_logged(work / f"{name}.log") for name in peers},
        "details": {
            "orders": ORDERS,
            "connections": wrk.CONNECTIONS,
            "wrk_threads": wrk.THREADS,
            "seconds": args.seconds,
            "runs": args.runs,
            "redeliveries": "every tenth delivery repeats one of the last 200 fresh ones",
        },
        "elapsed_s": round(time.monotonic() - started, 1),
        "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    out = RESULTS / f"peers-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    shutil.copyfile(out, RESULTS / "peers-latest.json")
    log(f"\nwritten {out} ({result['elapsed_s']:.0f} s)")
    if peer_errors := any(row["peer_non_2xx"] or row["peer_socket_errors"] for row in rows):
        log(f"a peer failed requests (see checks); the peers' logs say why: {work}")
    if not checks_ok:
        log("A CHECK FAILED: the node answered other than 2xx, events stored are not the ids")
        log(f"acknowledged, or an order was left unpaid; the logs are in {work}")
    elif not args.keep and not peer_errors:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if checks_ok else 1


if __name__ == "__main__":
    sys.exit(main())
