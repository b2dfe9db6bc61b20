"""PostgreSQL going away under a node in cluster mode, three ways (a fast restart, a crash and
restart, every backend terminated), while buyers start checkouts and a merchant reads
statuses: the node answers a retryable 503 meanwhile, serves again after, and its log tells
each outage in one line with its cause and its end in one more, never a traceback."""

from __future__ import annotations

import os
import re
import time

import httpx
import trio
from support.client import Admin, manual_shop
from support.nodes import NodeProcess
from support.postgres import PostgresServer, execute, require_psycopg
from support.waits import bound

require_psycopg()

FAULTS = ("fast", "immediate", "terminate")
CAUSES = {"OperationalError", "AdminShutdown", "CrashShutdown", "CannotConnectNow"}
QUIET_S = 3.5  # load between faults: longer than the outage's settling (outage.SETTLE_S)
# the load comes from one address: CONTRACT 8's per-address buckets would cap it
UNLIMITED = """
[rate_limits]
"checkout:ip" = { count = 1000000, period_s = 60 }
"status:ip" = { count = 1000000, period_s = 60 }
[tiers.free]
live_events = 1000000
test_events = 1000000
"""


async def _load(http: httpx.AsyncClient, project_id: str, answered: list[tuple[float, int]]):
    tx_ids: list[str] = []
    while True:
        try:
            made = await http.post(f"/api/checkout/manual/{project_id}", json={"productId": "book"})
            answered.append((time.monotonic(), made.status_code))
            if made.status_code == 201:
                tx_ids.append(made.json()["txId"])
            if tx_ids:
                read = await http.get(f"/status/{project_id}/{tx_ids[-1]}")
                answered.append((time.monotonic(), read.status_code))
        except httpx.TransportError:
            answered.append((time.monotonic(), 0))
        await trio.sleep(0.02)


def _fault(postgres: PostgresServer, pg_url: str, fault: str) -> None:
    if fault == "terminate":
        execute(
            pg_url,
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()",
        )
    else:
        postgres.restart(fault)


async def test_postgres_restarts_are_told_once_each_and_never_as_tracebacks(
    tmp_path, postgres, pg_url
) -> None:
    config = tmp_path / "edge.toml"
    config.write_text(UNLIMITED)
    env = {
        "EDGE_CONFIG": str(config),
        "EDGE_STORE": pg_url,
        "EDGE_LEASE_S": "2",
        "EDGE_SECRET_KEY": os.urandom(32).hex(),
    }
    node = NodeProcess(tmp_path / "n1", env).start()
    try:
        admin = Admin(node.url, node.admin_token)
        shop = await manual_shop(admin)
        await admin.aclose()
        answered: list[tuple[float, int]] = []
        async with (
            httpx.AsyncClient(base_url=node.url, timeout=bound(10)) as http,
            trio.open_nursery() as load,
        ):
            load.start_soon(_load, http, shop.project_id, answered)
            await trio.sleep(1.0)
            faulted: list[float] = []
            for fault in FAULTS:
                faulted.append(time.monotonic())
                await trio.to_thread.run_sync(_fault, postgres, pg_url, fault)
                await trio.sleep(QUIET_S)
            load.cancel_scope.cancel()
    finally:
        node.terminate()
    # served again after each fault, and refused meanwhile only as the contract says: 503
    for at in faulted:
        assert any(t > at and code in (200, 201) for t, code in answered), (at, answered[-5:])
    assert {code for _, code in answered} <= {200, 201, 503}, sorted(set(answered))
    log = node.log.read_text(errors="replace")
    print("\n".join(line for line in log.splitlines() if "store:" in line))
    assert "Traceback" not in log and " ERROR " not in log, log
    gone = re.findall(r"store: PostgreSQL out of reach \((\w+)", log)
    back = re.findall(r"store: PostgreSQL is back after", log)
    # one line each way per outage; a terminated backend the node never used is no outage
    assert 1 <= len(gone) <= len(FAULTS), log
    assert len(back) == len(gone), log
    # the cause, named by psycopg's class (AdminShutdown for a fast stop or a terminated
    # backend, OperationalError for a crash), never PostgreSQL's connection string
    assert all(cause in CAUSES for cause in gone), gone
    assert "postgres@" not in log  # the store's URL is never in the log
