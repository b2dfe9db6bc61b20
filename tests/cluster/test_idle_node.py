"""An idle cluster node costs PostgreSQL its heartbeat and nothing else: no queue polls, no
probes, one statement a beat (issue 35, item 5). The statements are the server's own log of
them (``log_statement = all`` for the test's database), counted in heartbeats, not seconds."""

from __future__ import annotations

from pathlib import Path

import httpx
import trio
from support.client import Admin, manual_shop
from support.cluster_nodes import cluster_node
from support.postgres import execute, require_psycopg
from support.waits import until

require_psycopg()

BEATS = 8  # the idle stretch, in the node's own heartbeats
HEARTBEAT = "WITH alive AS (INSERT INTO nodes"
GIVE_BACK = "UPDATE leases AS l SET expires_at = clock_timestamp() FROM unnest"
FORGET = "DELETE FROM nodes WHERE node_id IN"  # after the first beat, then hourly


def _statements(log: Path, start: int) -> list[str]:
    """The statements the server logged since byte ``start`` of its log."""
    text = log.read_bytes()[start:].decode(errors="replace")
    return [
        line.split(": ", 2)[-1]
        for line in text.splitlines()
        if "LOG:  statement: " in line or "LOG:  execute " in line
    ]


async def test_an_idle_node_sends_only_its_heartbeat(tmp_path, postgres, pg_url) -> None:
    database = pg_url.split("?", 1)[0].rsplit("/", 1)[1]
    # only this database's sessions log (the node's, opened after this)
    await trio.to_thread.run_sync(
        execute, postgres.url(), f"ALTER DATABASE {database} SET log_statement = 'all'"
    )
    log = postgres.root / "log"
    begin = log.stat().st_size
    async with (
        trio.open_nursery() as nursery,
        cluster_node(nursery, tmp_path / "a", pg_url, "node-a") as a,
        httpx.AsyncClient(base_url=a.url) as to_a,
    ):
        admin = Admin(a.url, a.ctx.settings.admin_token)
        shop = await manual_shop(admin)
        created = await to_a.post(
            f"/api/checkout/manual/{shop.project_id}", json={"productId": "book"}
        )
        assert created.status_code == 201, created.text
        tx_id = created.json()["txId"]
        # idle from the next beat on: what the checkout owes starts at once (its queue
        # workers' look at what is due, its owed end's time) and is not the idle node's cost,
        # nor is the look for nodes gone a week that follows the node's first beat (on a
        # loaded machine that beat can come after the checkout)
        await until(
            lambda: any(FORGET in s for s in _statements(log, begin)),
            what="the look for gone nodes after the first beat",
            timeout_s=60.0,
            every=0.2,
        )
        after = log.stat().st_size
        await until(
            lambda: any(HEARTBEAT in s for s in _statements(log, after)),
            what="a heartbeat after the checkout",
            timeout_s=60.0,
            every=0.2,
        )
        start = log.stat().st_size

        def beats() -> int:
            return sum(HEARTBEAT in s for s in _statements(log, start))

        await until(lambda: beats() >= BEATS, what=f"{BEATS} heartbeats", timeout_s=60.0, every=0.2)
        idle = _statements(log, start)
        others = [s for s in idle if HEARTBEAT not in s]
        # the project, quiet for a lease's length, has its lease given back: once
        assert all(GIVE_BACK in s for s in others) and len(others) <= 1, others

        # and the node takes the project up again as soon as it is asked
        status = await to_a.get(f"/status/{shop.project_id}/{tx_id}")
        assert status.status_code == 200 and status.json()["status"] == "pending", status.text
        await admin.aclose()
