"""What an idle cluster costs: one node and three nodes on one PostgreSQL, no requests at all,
for ``--seconds``: each node process's and PostgreSQL's CPU seconds (/proc utime + stime), and
the statements PostgreSQL ran (pg_stat_statements), by statement.

The projects (a few Stripe shops with open checkouts, so the durable queues hold entries due
later) are served once by the nodes before the idle stretch, so each node holds leases and has
its actors, as after light traffic.

    .venv/bin/python -m bench.cluster_idle [--seconds 60] [--projects 6]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path

import httpx

from bench import shop
from bench.cluster import (
    ADMIN_TOKEN,
    NODES,
    Postgres,
    cpu_seconds,
    node_env,
    running_postgres,
    stop_all,
)
from bench.run import log
from bench.servers import Server, every_cpu
from edge.signing import Signer


def idle(
    work: Path,
    pg: Postgres,
    config: Path,
    keys: dict[str, str],
    shops: Sequence[shop.StripeShop],
    names: Sequence[str],
    seconds: float,
) -> None:
    nodes = [
        Server.node(work / name, work / f"{name}.log", node_env(config, pg, name, keys))
        for name in names
    ]
    with ExitStack() as stack:
        stack.callback(stop_all, nodes)
        for node in nodes:
            node.cpus = every_cpu()
            node.start()
        for i, one in enumerate(shops):
            url = nodes[i % len(nodes)].url + one.status_path()
            answer = httpx.get(url, headers={"Authorization": f"Bearer {one.test_key}"})
            assert answer.status_code == 200, answer.text
        time.sleep(2.0)  # the requests' own work settles
        pg.sql("edge", "SELECT pg_stat_statements_reset()")
        pids = {n.pid: n for n in nodes}
        before = {pid: cpu_seconds([pid]) for pid in pids}
        pg_before = cpu_seconds(pg.pids())
        time.sleep(seconds)
        after = {pid: cpu_seconds([pid]) for pid in pids}
        pg_after = cpu_seconds(pg.pids())
        rows = pg.sql(
            "edge",
            "SELECT calls, round(total_exec_time::numeric, 1),"
            " left(regexp_replace(query, '\\s+', ' ', 'g'), 110)"
            " FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database"
            " WHERE datname = 'edge') ORDER BY calls DESC",
        )
    nodes_cpu = [after[p] - before[p] for p in pids]
    total = sum(r[0] for r in rows)
    log(
        f"== {len(names)} node(s), {seconds:.0f} s idle:"
        f" node CPU s {[round(c, 2) for c in nodes_cpu]}"
        f" (sum {sum(nodes_cpu):.2f}), PostgreSQL CPU s {pg_after - pg_before:.2f},"
        f" statements {total} ({total / seconds:.2f}/s)"
    )
    for calls, ms, query in rows:
        log(f"   {calls:6d} {float(ms):9.1f} ms  {query}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--projects", type=int, default=6)
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="edge-idle-"))
    config = shop.write_config(work / "edge.toml")
    (work / "signing").mkdir()
    keys = {
        "EDGE_SECRET_KEY": os.urandom(32).hex(),
        "EDGE_SIGNING_KEY": Signer.load(work / "signing").pem(),
    }
    with running_postgres(Path(tempfile.mkdtemp(prefix="edge-idle-pg-"))) as pg:
        with Server.node(work / "setup", work / "setup.log", node_env(config, pg, "n1", keys)) as n:
            admin = shop.Admin(n.url, work, ADMIN_TOKEN)
            shops = shop.stripe_shops(admin, args.projects, 2)
            admin.close()
        for names in (NODES[:1], NODES):
            idle(work, pg, config, keys, shops, names, args.seconds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
