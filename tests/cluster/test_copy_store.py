"""``edge cluster copy-store`` between the engines, for real: a store filled through a node on
LMDB is copied into PostgreSQL, a node in cluster mode serves the copy and answers as the first
did, and the cluster's store is copied back into a new data dir that a node on LMDB serves the
same way. A target that holds keys, a source a node still runs on, and bad places are refused
in one line."""

from __future__ import annotations

import json
import sys

import trio
from support.cluster_nodes import serving
from support.postgres import execute, require_psycopg
from support.store_answers import PUBLIC_URL, answers, fill, same_keys, still_pays

require_psycopg()

from edge.domain import ids  # noqa: E402
from edge.store.engine import DATABASES  # noqa: E402
from edge.store.postgres.leases import Leases  # noqa: E402
from edge.store.postgres.store import open_postgres_store  # noqa: E402


async def edge(*args: str) -> trio.CompletedProcess[bytes]:
    return await trio.run_process(
        [sys.executable, "-m", "edge", "cluster", "copy-store", *args],
        capture_stdout=True,
        capture_stderr=True,
        check=False,
    )


def one_line(done: trio.CompletedProcess[bytes], *words: str) -> str:
    said = done.stderr.decode()
    assert done.returncode == 1, (done.returncode, said, done.stdout)
    assert said.count("\n") == 1 and said.startswith("edge: ") and "Traceback" not in said, said
    for word in words:
        assert word in said, (word, said)
    return said


async def age_heartbeats(pg_url: str) -> None:
    """The nodes stopped a minute ago, by PostgreSQL's clock (a stopped node's last beat
    counts as alive for NODE_S)."""
    await trio.to_thread.run_sync(
        execute, pg_url, "UPDATE nodes SET heartbeat_at = heartbeat_at - interval '1 minute'"
    )


async def test_a_store_goes_to_postgresql_and_back_and_is_served_the_same(
    tmp_path, pg_url, sim
) -> None:
    first = tmp_path / "first"
    async with serving(first, public_url=PUBLIC_URL) as node:
        token = node.ctx.settings.admin_token
        shop = await fill(node.url, token, sim)
        before = await answers(node.url, token, shop)
    assert len(before["transactions"]["items"]) == 4 and len(before["events"]["items"]) == 6

    there = await edge("--from", str(first), "--to", pg_url, "--json")
    assert there.returncode == 0, there.stderr
    copied = json.loads(there.stdout)["copied"]
    assert set(copied) == set(DATABASES) and copied["records"] > 0 and copied["apikeys"] == 2

    same_keys(tmp_path / "cluster", first)
    async with serving(
        tmp_path / "cluster", public_url=PUBLIC_URL, store_url=pg_url, node_id="node-a"
    ) as node:
        assert await answers(node.url, token, shop) == before
        await still_pays(node.url, shop)  # the sealed Stripe key opened, and works
        grown = await answers(node.url, token, shop)
    assert len(grown["transactions"]["items"]) == 5

    # the cluster's node stopped just now: its last beat still counts
    busy = await edge("--from", pg_url, "--to", str(tmp_path / "back"))
    one_line(busy, "node-a", "stop every node of the cluster first")
    assert not (tmp_path / "back" / "store").exists()
    await age_heartbeats(pg_url)
    back = await edge("--from", pg_url, "--to", str(tmp_path / "back"))
    assert back.returncode == 0, back.stderr
    said = back.stdout.decode()
    assert said.startswith("copied ") and "from the PostgreSQL store into the data dir" in said
    assert pg_url not in said + back.stderr.decode()

    same_keys(tmp_path / "back", first)
    async with serving(tmp_path / "back", public_url=PUBLIC_URL) as node:
        assert await answers(node.url, token, shop) == grown
        await still_pays(node.url, shop)


async def test_a_target_that_holds_keys_or_a_running_node_is_refused(tmp_path, pg_url) -> None:
    data, other = tmp_path / "data", tmp_path / "other"
    async with serving(data, public_url=PUBLIC_URL):
        running = await edge("--from", str(data), "--to", pg_url)
        one_line(running, f"a node is running on the data dir {data}", "stop it", "lost")
    assert (await edge("--from", str(data), "--to", pg_url)).returncode == 0

    again = await edge("--from", str(data), "--to", pg_url)
    one_line(again, "the target store is not empty (keys in meta)", "new, empty database")
    async with serving(other, public_url=PUBLIC_URL):
        into_running = await edge("--from", pg_url, "--to", str(other))
        one_line(into_running, f"a node is running on the data dir {other}", "copying into")
    # the node made its store, which holds the sealing canary
    into_full = await edge("--from", pg_url, "--to", str(other))
    one_line(into_full, f"the data dir {other} already holds a store (keys in meta)")
    into_itself = await edge("--from", str(data), "--to", str(data) + "/")
    one_line(into_itself, "the same store")


async def test_bad_places_are_one_line_and_never_echo_a_password(tmp_path, pg_url) -> None:
    nowhere = await edge("--from", str(tmp_path / "none"), "--to", pg_url)
    one_line(nowhere, f"no store at {tmp_path / 'none' / 'store'}")
    other_engine = await edge("--from", "mysql://edge@db/edge", "--to", str(tmp_path / "x"))
    one_line(other_engine, "--from takes a data dir or a postgresql:// URL")
    unreachable = f"postgresql://edge:hunter2@/edge?host={tmp_path}"
    gone = await edge("--from", unreachable, "--to", str(tmp_path / "y"))
    said = one_line(gone, "cannot reach the PostgreSQL store")
    assert "hunter2" not in said
    not_edge = await edge("--from", pg_url, "--to", str(tmp_path / "z"))
    one_line(not_edge, "holds no edge store")
    assert not (tmp_path / "y" / "store").exists() and not (tmp_path / "z" / "store").exists()


async def test_a_source_with_a_live_lease_is_refused_though_no_node_beat(tmp_path, pg_url) -> None:
    async with open_postgres_store(pg_url) as store:
        # a node killed a moment ago, that beat long before: its lease runs to its end
        await Leases(store.pool, "node-k", "", lease_s=60).acquire(ids.new_project_id())
    refused = await edge("--from", pg_url, "--to", str(tmp_path / "x"))
    one_line(refused, "node-k", "live lease", "stop every node")
