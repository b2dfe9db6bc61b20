"""Two real nodes on one PostgreSQL store (cluster mode, EDGE_STORE): a project is served by the
node holding its lease; the other answers a retryable 503 naming it; a node that lost the lease
writes nothing more, and the project is served again by the next node it reaches."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path

import httpx
import trio
from support.client import Admin, bearer, manual_shop
from support.nodes import node_settings
from support.postgres import execute, expire_lease, require_psycopg
from support.waits import until

require_psycopg()

from edge.config import ADMIN_TOKEN_FILE, SECRET_KEY_FILE  # noqa: E402
from edge.node import RunningNode, run_node  # noqa: E402
from edge.signing import SIGNING_KEY_FILE  # noqa: E402
from edge.store.leases import Leases  # noqa: E402

LEASE_S = 1.5  # the heartbeat beats every half second


@asynccontextmanager
async def cluster_node(
    nursery: trio.Nursery, data: Path, pg_url: str, node_id: str, like: Path | None = None
) -> AsyncIterator[RunningNode]:
    """A node of the cluster; ``like``: a data dir whose sealing key, signing key and admin
    token it shares (cluster nodes open each other's sealed secrets, and sign alike)."""
    _data_dir(data, like)
    settings = node_settings(data, store_url=pg_url, node_id=node_id, lease_s=LEASE_S)
    running: RunningNode = await nursery.start(partial(run_node, settings))
    try:
        yield running
    finally:
        running.stop.set()


def _data_dir(data: Path, like: Path | None) -> None:
    data.mkdir(parents=True)
    if like is not None:
        for name in (SECRET_KEY_FILE, SIGNING_KEY_FILE, ADMIN_TOKEN_FILE):
            shutil.copy(like / name, data / name)


async def _lease(pg_url: str, project_id: str) -> tuple[str, int]:
    rows = await trio.to_thread.run_sync(
        execute, pg_url, "SELECT owner, epoch FROM leases WHERE project_id = %s", project_id
    )
    return rows[0]


async def test_one_node_serves_a_project_and_the_next_takes_it_up(tmp_path, pg_url) -> None:
    async with (
        trio.open_nursery() as nursery,
        cluster_node(nursery, tmp_path / "a", pg_url, "node-a") as a,
        cluster_node(nursery, tmp_path / "b", pg_url, "node-b", like=tmp_path / "a") as b,
        httpx.AsyncClient(base_url=a.url) as to_a,
        httpx.AsyncClient(base_url=b.url) as to_b,
    ):
        admin = Admin(a.url, a.ctx.settings.admin_token)
        shop = await manual_shop(admin)  # set up through node a: node a serves it
        pid = shop.project_id
        created = await to_a.post(f"/api/checkout/manual/{pid}", json={"productId": "book"})
        assert created.status_code == 201, created.text
        tx_id = created.json()["txId"]
        assert (await to_a.get(f"/status/{pid}/{tx_id}")).json()["status"] == "pending"
        owner, epoch = await _lease(pg_url, pid)
        assert owner == "node-a"

        refused = await to_b.get(f"/status/{pid}/{tx_id}")
        assert refused.status_code == 503, refused.text
        assert refused.json()["error"]["retryable"] is True
        assert "node-a" in refused.json()["error"]["message"]

        # node a pauses past its lease: node b takes the project up at the next request
        await expire_lease(pg_url, pid)
        taken = await to_b.get(f"/status/{pid}/{tx_id}")
        assert taken.status_code == 200 and taken.json()["status"] == "pending"
        assert (await _lease(pg_url, pid)) == ("node-b", epoch + 1)
        paid = await to_b.post(
            f"/api/projects/{pid}/transactions/{tx_id}/mark-paid", headers=bearer(shop.live_key)
        )
        assert paid.status_code == 200, paid.text

        # node a, awake again, still has the actor of epoch 1 in memory: it writes nothing
        stale = await to_a.post(
            f"/api/projects/{pid}/transactions/{tx_id}/cancel", headers=bearer(shop.live_key)
        )
        assert stale.status_code == 503, stale.text
        assert (await to_b.get(f"/status/{pid}/{tx_id}")).json()["status"] == "succeeded"
        # its heartbeat finds the lease lost and drops the actor: nothing stale is answered
        await until(lambda: pid not in a.ctx.registry, what="node a drops the actor")
        assert a.ctx.ownership is not None and a.ctx.ownership.lost >= 1
        again = await to_a.get(f"/status/{pid}/{tx_id}")
        assert again.status_code == 503 and "node-b" in again.json()["error"]["message"]
        await admin.aclose()


async def test_a_stopping_node_gives_its_leases_back(tmp_path, pg_url) -> None:
    async with trio.open_nursery() as nursery:
        async with cluster_node(nursery, tmp_path / "a", pg_url, "node-a") as a:
            admin = Admin(a.url, a.ctx.settings.admin_token)
            shop = await manual_shop(admin)
            await admin.aclose()
            assert (await _lease(pg_url, shop.project_id))[0] == "node-a"
        async with (
            cluster_node(nursery, tmp_path / "b", pg_url, "node-b", like=tmp_path / "a") as b,
            httpx.AsyncClient(base_url=b.url) as to_b,
        ):
            # at once, not after LEASE_S: node a released it on its way out
            answer = await to_b.get(
                f"/api/projects/{shop.project_id}/public-info", params={"productId": "book"}
            )
            assert answer.status_code == 200, answer.text
            assert (await _lease(pg_url, shop.project_id))[0] == "node-b"


async def test_nodes_are_listed_alive_with_their_addresses(tmp_path, pg_url) -> None:
    async with (
        trio.open_nursery() as nursery,
        cluster_node(nursery, tmp_path / "a", pg_url, "node-a") as a,
    ):
        assert a.ctx.ownership is not None
        leases: Leases = a.ctx.ownership.leases
        [node] = await leases.nodes()
        assert (node.node_id, node.address, node.alive) == ("node-a", a.url, True)


async def test_a_store_out_of_reach_stops_the_start_with_one_line_and_no_password(
    tmp_path,
) -> None:
    # a socket directory with no server in it: PostgreSQL out of reach
    url = f"postgresql://edge:hunter2@/edge?host={tmp_path}"
    started = await trio.run_process(
        [sys.executable, "-m", "edge", "serve", "--port", "0", "--data", str(tmp_path / "d")],
        env={**os.environ, "EDGE_STORE": url},
        capture_stdout=True,
        capture_stderr=True,
        check=False,
    )
    said = (started.stdout + started.stderr).decode()
    assert started.returncode != 0
    assert "the store cannot be reached" in said and "EDGE_STORE" in said, said
    assert "Traceback" not in said and "hunter2" not in said, said
