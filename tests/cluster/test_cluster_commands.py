"""``edge cluster nodes / leases / move / drain`` against a real PostgreSQL store (the leases
of edge.store.leases) and, for ``move``, a real HAProxy's pins (issue 28)."""

from __future__ import annotations

import json
import sys

import pytest
import trio
from support.postgres import require_psycopg

require_psycopg()

from edge.domain import ids  # noqa: E402
from edge.store.leases import Leases  # noqa: E402
from edge.store.postgres import open_postgres_store  # noqa: E402


async def edge(*args: str) -> trio.CompletedProcess[bytes]:
    return await trio.run_process(
        [sys.executable, "-m", "edge", "cluster", *args],
        capture_stdout=True,
        capture_stderr=True,
        check=False,
    )


@pytest.fixture
async def two_nodes(pg_url: str):  # type: ignore[no-untyped-def]
    async with open_postgres_store(pg_url) as store:
        a = Leases(store.pool, "node-a", "10.0.0.1:8080")
        b = Leases(store.pool, "node-b", "10.0.0.2:8080")
        await a.heartbeat()
        await b.heartbeat()
        yield a, b


async def test_nodes_and_leases_are_listed_as_the_store_has_them(two_nodes, pg_url) -> None:
    a, _ = two_nodes
    project = ids.new_project_id()
    await a.acquire(project)
    nodes = await edge("nodes", "--store", pg_url, "--json")
    assert nodes.returncode == 0, nodes.stderr
    listed = json.loads(nodes.stdout)["items"]
    assert [(n["node_id"], n["address"], n["alive"]) for n in listed] == [
        ("node-a", "10.0.0.1:8080", True),
        ("node-b", "10.0.0.2:8080", True),
    ]
    leases = await edge("leases", "--store", pg_url)
    line = leases.stdout.decode().strip()
    assert line.startswith(f"{project}  node-a  epoch 1  live ")


async def test_move_fences_the_holder_at_once_and_drain_ends_a_nodes_leases(
    two_nodes, pg_url
) -> None:
    a, b = two_nodes
    moved, kept = ids.new_project_id(), ids.new_project_id()
    await a.acquire(moved)
    await a.acquire(kept)
    done = await edge("move", moved, "node-b", "--store", pg_url, "--no-pin", "--json")
    assert done.returncode == 0, done.stderr
    lease = json.loads(done.stdout)
    assert (lease["owner"], lease["epoch"], lease["live"]) == ("node-b", 2, True)
    assert await a.heartbeat() == [moved]  # the old holder learns it lost the project
    assert (await b.acquire(moved)).epoch == 3  # the new one takes it up
    nowhere = await edge("move", kept, "node-z", "--store", pg_url, "--no-pin")
    assert nowhere.returncode == 1 and b"no live node node-z" in nowhere.stderr
    drained = await edge("drain", "node-a", "--store", pg_url, "--no-haproxy", "--json")
    assert json.loads(drained.stdout) == {"node": "node-a", "released": [kept]}
    assert (await b.acquire(kept)).owner == "node-b"  # free for the next node at once


async def test_without_a_store_or_with_a_wrong_one_it_says_so_in_one_line() -> None:
    for args in (("nodes",), ("leases", "--store", "mysql://x"), ("drain", "n", "--store", "x")):
        answer = await edge(*args)
        assert answer.returncode == 1
        assert answer.stderr.decode().count("\n") == 1, answer.stderr
    gone = await edge("nodes", "--store", "postgresql:///nowhere?host=/nonexistent")
    assert gone.returncode == 1 and b"cannot reach the cluster's store" in gone.stderr


async def test_a_new_store_has_no_nodes_and_a_bad_url_never_echoes_its_password(pg_url) -> None:
    fresh = await edge("leases", "--store", pg_url)  # no tables yet: made, then listed
    assert (fresh.returncode, fresh.stdout.decode().strip()) == (0, "no leases")
    bad = await edge("nodes", "--store", "postgresql://edge:s3cr%zzet@127.0.0.1:1/x")
    said = bad.stderr.decode()
    assert bad.returncode == 1 and said.count("\n") == 1, said
    assert "s3cr" not in said and "Traceback" not in said
