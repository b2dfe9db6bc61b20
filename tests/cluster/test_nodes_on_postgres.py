"""Two real nodes on one PostgreSQL store (cluster mode, EDGE_STORE): a project is served by the
node holding its lease; a request reaching the other has the project handed over at once, or,
when the holder does not answer, a retryable 503 naming it; a node that lost the lease writes
nothing more, and the project is served again by the next node it reaches."""

from __future__ import annotations

import os
import sys

import httpx
import trio
from support.client import Admin, Shop, bearer, manual_shop
from support.cluster_nodes import cluster_node
from support.postgres import execute, expire_lease, require_psycopg
from support.waits import until

require_psycopg()

from edge.store.postgres.leases import Leases  # noqa: E402


async def _lease(pg_url: str, project_id: str) -> tuple[str, int]:
    rows = await trio.to_thread.run_sync(
        execute, pg_url, "SELECT owner, epoch FROM leases WHERE project_id = %s", project_id
    )
    return rows[0]


async def _checkout(admin: Admin, node: httpx.AsyncClient) -> tuple[Shop, str]:
    """A pay-by-mail shop and a checkout of it, both through ``node``."""
    shop = await manual_shop(admin)
    created = await node.post(f"/api/checkout/manual/{shop.project_id}", json={"productId": "book"})
    assert created.status_code == 201, created.text
    return shop, created.json()["txId"]


async def test_a_request_on_another_node_is_handed_over_at_once(tmp_path, pg_url) -> None:
    """HAProxy sends a project to the node that came back into its hash: that node asks the
    holder, which lets the project go (its actor dropped, its lease ended) and says so, and the
    request is answered there, not refused for a lease's length."""
    async with (
        trio.open_nursery() as nursery,
        cluster_node(nursery, tmp_path / "a", pg_url, "node-a") as a,
        cluster_node(nursery, tmp_path / "b", pg_url, "node-b", like=tmp_path / "a") as b,
        httpx.AsyncClient(base_url=a.url) as to_a,
        httpx.AsyncClient(base_url=b.url) as to_b,
    ):
        admin = Admin(a.url, a.ctx.settings.admin_token)
        shop, tx_id = await _checkout(admin, to_a)
        pid = shop.project_id
        _, epoch = await _lease(pg_url, pid)

        moved = await to_b.get(f"/status/{pid}/{tx_id}")
        assert moved.status_code == 200 and moved.json()["status"] == "pending", moved.text
        assert (await _lease(pg_url, pid)) == ("node-b", epoch + 1)
        assert pid not in a.ctx.registry
        assert a.ctx.ownership is not None and b.ctx.ownership is not None
        assert (a.ctx.ownership.handed, b.ctx.ownership.taken) == (1, 1)
        # a straggler HAProxy sent to node a as it switched: refused, retryable, not asked back
        straggler = await to_a.get(f"/status/{pid}/{tx_id}")
        assert straggler.status_code == 503, straggler.text
        assert "node-b" in straggler.json()["error"]["message"]
        paid = await to_b.post(
            f"/api/projects/{pid}/transactions/{tx_id}/mark-paid", headers=bearer(shop.live_key)
        )
        assert paid.status_code == 200, paid.text
        await admin.aclose()


async def test_a_holder_that_does_not_answer_keeps_its_lease_to_its_end(
    tmp_path, pg_url, monkeypatch
) -> None:
    """A holder that hears nothing (paused, cut off): the asking node answers a retryable 503
    naming it, and takes the project up once the lease has ended; the holder, awake again,
    writes nothing under the lease it lost."""
    async with (
        trio.open_nursery() as nursery,
        cluster_node(nursery, tmp_path / "a", pg_url, "node-a") as a,
        cluster_node(nursery, tmp_path / "b", pg_url, "node-b", like=tmp_path / "a") as b,
        httpx.AsyncClient(base_url=a.url) as to_a,
        httpx.AsyncClient(base_url=b.url) as to_b,
    ):
        admin = Admin(a.url, a.ctx.settings.admin_token)
        shop, tx_id = await _checkout(admin, to_a)  # set up through node a: node a serves it
        pid = shop.project_id
        assert (await to_a.get(f"/status/{pid}/{tx_id}")).json()["status"] == "pending"
        owner, epoch = await _lease(pg_url, pid)
        assert owner == "node-a"
        assert a.ctx.ownership is not None and b.ctx.ownership is not None
        monkeypatch.setattr(a.ctx.ownership, "_notices", None)  # it hears, answers nothing

        refused = await to_b.get(f"/status/{pid}/{tx_id}")
        assert refused.status_code == 503, refused.text
        assert refused.json()["error"]["retryable"] is True
        assert "node-a" in refused.json()["error"]["message"]
        assert b.ctx.ownership.taken == 0

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
        assert a.ctx.ownership.lost >= 1
        await admin.aclose()


async def test_an_actor_serves_only_under_the_lease_it_was_made_at(tmp_path, pg_url) -> None:
    """A lease this node takes anew (a queue worker's claim after a pause does) has a new
    epoch: the actor made under the old one is dropped at the next request, which a new actor
    serves, instead of its writes being refused as stale until it goes quiet."""
    async with (
        trio.open_nursery() as nursery,
        cluster_node(nursery, tmp_path / "a", pg_url, "node-a") as a,
        httpx.AsyncClient(base_url=a.url) as to_a,
    ):
        admin = Admin(a.url, a.ctx.settings.admin_token)
        shop = await manual_shop(admin)
        pid = shop.project_id
        path = f"/api/checkout/manual/{pid}"
        assert (await to_a.post(path, json={"productId": "book"})).status_code == 201
        _, epoch = await _lease(pg_url, pid)
        assert a.ctx.ownership is not None
        await a.ctx.ownership.leases.acquire(pid)  # as claim() does once the lease ran out
        assert (await _lease(pg_url, pid)) == ("node-a", epoch + 1)
        again = await to_a.post(path, json={"productId": "book"})
        assert again.status_code == 201, again.text
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
