"""Backup and restore of a cluster's store, as docs/cluster.md says to make them: Debian's
``pg_dump -Fc`` while a real node runs on the store, ``pg_restore`` into a new database, and a
node started on that database with the same keys answers as the first did. ``edge backup`` on a
node in cluster mode refuses in one line naming the command to use instead."""

from __future__ import annotations

import os
import sys
from contextlib import AbstractAsyncContextManager
from pathlib import Path

import trio
from support.cluster_nodes import serving
from support.postgres import bin_dir, require_psycopg
from support.store_answers import PUBLIC_URL, answers, fill, same_keys, still_pays

require_psycopg()

from edge.node import RunningNode  # noqa: E402


def cluster_node(data: Path, pg_url: str, node_id: str) -> AbstractAsyncContextManager[RunningNode]:
    return serving(data, public_url=PUBLIC_URL, store_url=pg_url, node_id=node_id)


async def run(*command: str | Path, env: dict[str, str] | None = None) -> trio.CompletedProcess:
    return await trio.run_process(
        [str(part) for part in command],
        capture_stdout=True,
        capture_stderr=True,
        check=False,
        env={**os.environ, **(env or {})},
    )


async def test_a_dump_taken_live_restores_into_a_new_database_served_the_same(
    tmp_path, postgres, pg_url, sim
) -> None:
    pg = bin_dir()
    dump = tmp_path / "edge.dump"
    first = tmp_path / "a"
    async with cluster_node(first, pg_url, "node-a") as node:
        token = node.ctx.settings.admin_token
        shop = await fill(node.url, token, sim)
        before = await answers(node.url, token, shop)
        # while the node runs: pg_dump reads one snapshot of the whole database
        dumped = await run(pg / "pg_dump", "--format=custom", f"--file={dump}", pg_url)
        assert dumped.returncode == 0, dumped.stderr
    assert len(before["transactions"]["items"]) == 4 and len(before["events"]["items"]) == 6

    restored_url = postgres.new_database()
    restored = await run(
        pg / "pg_restore", "--no-owner", "--single-transaction", f"--dbname={restored_url}", dump
    )
    assert restored.returncode == 0, restored.stderr

    # a new data dir with the keys kept beside the dump; the same node id takes its leases up
    same_keys(tmp_path / "b", first)
    async with cluster_node(tmp_path / "b", restored_url, "node-a") as node:
        assert await answers(node.url, token, shop) == before
        await still_pays(node.url, shop)  # the sealed Stripe key opened, and works


async def test_edge_backup_of_a_cluster_node_names_pg_dump_in_one_line(tmp_path, pg_url) -> None:
    data = tmp_path / "a"
    async with cluster_node(data, pg_url, "node-a"):
        refused = await run(
            sys.executable, "-m", "edge", "backup", tmp_path / "copy", "--data", data,
            env={"EDGE_STORE": pg_url},
        )  # fmt: skip
    said = refused.stderr.decode()
    assert refused.returncode == 1 and said.count("\n") == 1 and "Traceback" not in said, said
    assert 'pg_dump --format=custom --file=edge.dump "$EDGE_STORE"' in said, said
    assert pg_url not in said and not (tmp_path / "copy").exists()

    # without EDGE_STORE in the command's environment, the data dir has no store to copy
    bare = await run(sys.executable, "-m", "edge", "backup", tmp_path / "copy", "--data", data)
    said = bare.stderr.decode()
    assert bare.returncode == 1 and said.count("\n") == 1, said
    assert "no store at" in said and "pg_dump --format=custom" in said
