"""The PostgreSQL engine (edge.store.postgres) beside the LMDB store: the same reads, checked by
running the same cases (and random ones) against both; group commit through the same writer;
fencing by leases."""

from __future__ import annotations

import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.engines import OpenEngine
from support.postgres import execute, expire_lease, require_psycopg
from support.waits import bound

require_psycopg()  # before psycopg and edge.store.postgres.*: they need libpq

import psycopg  # noqa: E402

from edge.store import keys  # noqa: E402
from edge.store.codec import pack, unpack  # noqa: E402
from edge.store.engine import DATABASES, StoreUnavailable, lease_op  # noqa: E402
from edge.store.lmdb.store import open_store  # noqa: E402
from edge.store.postgres.leases import Leases  # noqa: E402
from edge.store.postgres.store import PostgresStore, StaleEpoch, open_postgres_store  # noqa: E402
from edge.store.writer import StoreWriter, open_writer  # noqa: E402

A = "prj_aaaaaaaaaaaaaaaa"
B = "prj_bbbbbbbbbbbbbbbb"
A_NEXT = "prj_aaaaaaaaaaaaaaab"


def _records(*projects: str) -> list[tuple[str, bytes, bytes | None]]:
    ops: list[tuple[str, bytes, bytes | None]] = []
    for project in projects:
        for n in range(3):
            tx = keys.record(project, keys.TRANSACTION, f"tx_{n}")
            ops.append(("records", tx, pack({"p": project, "n": n})))
            ops.append(("records", keys.record(project, keys.EVENT, f"evt_{n}"), pack({})))
    return ops


async def test_prefix_scan_stays_in_one_project_and_kind(engine: OpenEngine) -> None:
    await engine.writer.write(_records(A, A_NEXT, B))
    scan = engine.reads.scan
    prefix = keys.prefix(A, keys.TRANSACTION)

    async def numbers(**options: Any) -> list[int]:
        return [unpack(v)["n"] for _, v in await scan(prefix, **options)]

    assert await numbers() == [0, 1, 2]
    assert await numbers(reverse=True) == [2, 1, 0]
    assert await numbers(after=keys.record(A, keys.TRANSACTION, "tx_0")) == [1, 2]
    assert await numbers(after=keys.record(A, keys.TRANSACTION, "tx_2"), reverse=True) == [1, 0]
    assert await numbers(limit=2) == [0, 1]
    assert await numbers(reverse=True, limit=1) == [2]
    assert await numbers(after=b"", reverse=True) == []  # nothing below the empty key
    assert await numbers(after=b"\xff") == []  # nothing past the end
    assert await numbers(after=b"\xff", reverse=True) == [2, 1, 0]
    assert await numbers(after=b"a") == [0, 1, 2]  # an ``after`` before the prefix


async def test_scans_of_the_empty_and_the_highest_prefixes(engine: OpenEngine) -> None:
    ops = [("meta", key, key) for key in (b"\x00", b"a", b"a\xff", b"\xff", b"\xff\xff\x01")]
    await engine.writer.write(ops)
    everything = [key for _, key, _ in ops]

    async def scanned(prefix: bytes, **options: Any) -> list[bytes]:
        return [k for k, _ in await engine.reads.scan(prefix, db="meta", **options)]

    assert await scanned(b"") == everything
    assert await scanned(b"", reverse=True) == everything[::-1]
    assert await scanned(b"\xff") == [b"\xff", b"\xff\xff\x01"]
    assert await scanned(b"\xff\xff", reverse=True) == [b"\xff\xff\x01"]
    assert await scanned(b"a", after=b"a") == [b"a\xff"]
    assert await scanned(b"a", after=b"a\xff", reverse=True) == [b"a"]


async def test_heads_list_each_project_once_past_after(engine: OpenEngine) -> None:
    await engine.writer.write(_records(A, A_NEXT, B))
    width = keys.PROJECT_ID_LEN
    heads = engine.reads.heads
    assert await heads(width, limit=10) == [p.encode() for p in (A, A_NEXT, B)]
    assert await heads(width, after=A.encode(), limit=10) == [A_NEXT.encode(), B.encode()]
    assert await heads(width, limit=1) == [A.encode()]
    assert await heads(width, after=B.encode(), limit=10) == []
    # a key shorter than the width is its own head, and hides the keys it begins
    await engine.writer.write([("meta", b"ab", b""), ("meta", b"abc", b""), ("meta", b"b", b"")])
    assert await heads(2, db="meta", limit=10) == [b"ab", b"b"]


async def test_get_put_delete_in_each_database(engine: OpenEngine) -> None:
    await engine.writer.write([(db, b"k", pack({"db": db})) for db in DATABASES])
    for db in DATABASES:
        assert await engine.reads.get(b"k", db=db) == {"db": db}
    await engine.writer.write([("outbox", b"k", None), ("outbox", b"missing", None)])
    assert await engine.reads.get_raw(b"k", db="outbox") is None
    assert await engine.reads.get_raw(b"k", db="notify") is not None


async def test_a_group_commits_in_order_and_a_bad_ticket_fails_alone(engine: OpenEngine) -> None:
    writer = engine.writer
    tickets = [writer.submit([("records", b"k", pack({"n": n}))]) for n in range(50)]
    deleted = writer.submit([("records", b"k2", b"x"), ("records", b"k2", None)])
    for ticket in (*tickets, deleted):
        await ticket.wait()
    assert writer.stats.tickets_per_commit() > 1  # tickets shared commits
    assert await engine.reads.get(b"k") == {"n": 49}  # the last in submission order
    assert await engine.reads.get_raw(b"k2") is None
    good = writer.submit([("records", b"good", b"")])
    bad = writer.submit([("records", b"half", b""), ("records", b"", b"empty key")])
    later = writer.submit([("records", b"later", b"")])
    await good.wait()
    await later.wait()
    with pytest.raises(Exception):  # noqa: B017 - each engine refuses an empty key its own way
        await bad.wait()
    assert await engine.reads.get_raw(b"half") is None  # a ticket is all or nothing
    assert await engine.reads.get_raw(b"later") == b""


async def test_each_engine_names_where_it_differs(engine: OpenEngine) -> None:
    store = engine.reads
    features = store.features
    assert (store.disk_room() is not None) == features.local_disk
    await engine.writer.write([lease_op(A, 7), _tx(A)])  # no fence given: nothing to check
    if not isinstance(store, PostgresStore):  # one node's engine: no leases to check
        return
    store.fence = Leases(store.pool, "node-a", "10.0.0.1:8080")
    with pytest.raises(StaleEpoch):  # a lease op is checked once a fence is given
        await engine.writer.write([lease_op(A, 7), _tx(A, 1)])


async def test_a_server_out_of_reach_is_store_unavailable(tmp_path) -> None:
    store = PostgresStore(f"postgresql://postgres@/none?host={tmp_path}&connect_timeout=2")
    with pytest.raises(StoreUnavailable):
        await store.get_raw(b"k")
    async with open_writer(store) as writer:
        with pytest.raises(StoreUnavailable) as refused:
            await writer.write([("records", b"k", b"")])
    assert refused.value.retryable
    store.close()


# Random keys and ops: both engines answer every read the same.

# few enough keys (39) that reads often name a key that was written
_BYTES = st.sampled_from([b"\x00", b"a", b"\xff"])
_KEYS = st.lists(_BYTES, min_size=1, max_size=3).map(b"".join)
_PREFIXES = st.lists(_BYTES, max_size=3).map(b"".join)
_OPS = st.lists(
    st.tuples(
        st.sampled_from(["records", "meta"]), _KEYS, st.one_of(st.none(), st.binary(max_size=3))
    ),
    max_size=30,
)


def _reads(keys_: st.SearchStrategy[bytes]) -> st.SearchStrategy[list[Any]]:
    return st.lists(
        st.one_of(
            st.tuples(st.just("get"), keys_),
            st.tuples(
                st.just("scan"),
                _PREFIXES,
                st.one_of(st.none(), keys_),
                st.booleans(),
                st.one_of(st.none(), st.integers(1, 5)),
            ),
            st.tuples(
                st.just("heads"), st.integers(1, 3), st.one_of(st.none(), keys_), st.integers(0, 5)
            ),
        ),
        min_size=1,
        max_size=12,
    )


async def _answers(reads: Any, writer: StoreWriter, ops: list[Any], asked: list[Any]) -> list[Any]:
    tickets = [writer.submit(ops[i : i + 3]) for i in range(0, len(ops), 3)]
    for ticket in tickets:
        await ticket.wait()
    out = []
    for db in ("records", "meta"):
        for read in asked:
            if read[0] == "get":
                out.append(await reads.get_raw(read[1], db=db))
            elif read[0] == "scan":
                _, prefix, after, reverse, limit = read
                out.append(
                    await reads.scan(prefix, after=after, reverse=reverse, limit=limit, db=db)
                )
            else:
                _, width, after, limit = read
                out.append(await reads.heads(width, after=after, limit=limit, db=db))
    return out


async def _on_lmdb(ops: list[Any], asked: list[Any]) -> list[Any]:
    with tempfile.TemporaryDirectory() as path, open_store(Path(path), map_size=2**24) as store:
        async with open_writer(store) as writer:
            return await _answers(store, writer, ops, asked)


async def _on_postgres(url: str, ops: list[Any], asked: list[Any]) -> list[Any]:
    async with open_postgres_store(url) as store:
        await store.pool.run(
            lambda conn: conn.execute(f"TRUNCATE {', '.join(f'store_{db}' for db in DATABASES)}")
        )
        async with open_writer(store) as writer:
            return await _answers(store, writer, ops, asked)


@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_both_engines_answer_every_read_alike(pg_url: str, data: st.DataObject) -> None:
    ops = data.draw(_OPS)
    written = sorted({key for _, key, _ in ops})
    # reads name keys that were written as often as any others (as ``after``: the edge cases)
    asked = data.draw(_reads(st.one_of(st.sampled_from(written), _KEYS) if written else _KEYS))
    assert trio.run(_on_postgres, pg_url, ops, asked) == trio.run(_on_lmdb, ops, asked)


# Fencing: a commit checks its projects' leases in its own transaction.


def _tx(project: str, n: int = 0) -> tuple[str, bytes, bytes]:
    return ("records", keys.record(project, keys.TRANSACTION, f"tx_{n}"), pack({"n": n}))


@dataclass
class FencedNode:
    leases: Leases
    writer: StoreWriter
    store: Any


@pytest.fixture
async def two_nodes(pg_url: str) -> AsyncIterator[tuple[FencedNode, FencedNode]]:
    async with (
        open_postgres_store(pg_url) as plain_a,
        open_postgres_store(pg_url) as plain_b,
    ):
        one = Leases(plain_a.pool, "node-a", "10.0.0.1:8080")
        two = Leases(plain_b.pool, "node-b", "10.0.0.2:8080")
        plain_a.fence, plain_b.fence = one, two
        async with open_writer(plain_a) as writer_a, open_writer(plain_b) as writer_b:
            yield FencedNode(one, writer_a, plain_a), FencedNode(two, writer_b, plain_b)


async def test_a_commit_needs_the_lease_of_each_project_it_writes(two_nodes, pg_url) -> None:
    a, _ = two_nodes
    with pytest.raises(StaleEpoch) as refused:
        await a.writer.write([_tx(A)])
    assert refused.value.projects == (A,) and refused.value.retryable
    await a.leases.acquire(A)
    await a.writer.write([_tx(A)])
    with pytest.raises(StaleEpoch):  # one project of the ticket not held: none of it lands
        await a.writer.write([_tx(A, 1), _tx(B, 1)])
    assert await a.store.get_raw(_tx(A, 1)[1]) is None
    await a.writer.write([("accounts", b"a:acc_1", b"{}")])  # node-wide: not fenced


async def test_a_paused_owner_cannot_commit_after_a_takeover(two_nodes, pg_url) -> None:
    a, b = two_nodes
    await a.leases.acquire(A)
    await a.writer.write([_tx(A, 0)])
    await expire_lease(pg_url, A)  # node a paused past its lease
    with pytest.raises(StaleEpoch):  # expired, not yet taken: already refused
        await a.writer.write([_tx(A, 1)])
    taken = await b.leases.acquire(A)
    assert (taken.owner, taken.epoch) == ("node-b", 2)
    await b.writer.write([_tx(A, 2)])
    assert a.leases.epoch(A) == 1  # a still believes it holds epoch 1 ...
    with pytest.raises(StaleEpoch):  # ... and its commits fail, writing nothing
        await a.writer.write([_tx(A, 3), ("records", keys.project(A), pack({"stale": True}))])
    assert await a.store.get_raw(_tx(A, 3)[1]) is None
    assert await a.store.get_raw(keys.project(A)) is None


async def test_a_stale_ticket_fails_alone_in_its_group(two_nodes, pg_url) -> None:
    a, _ = two_nodes
    await a.leases.acquire(A)
    stale = a.writer.submit([_tx(B)])
    good = a.writer.submit([_tx(A)])
    await good.wait()
    with pytest.raises(StaleEpoch):
        await stale.wait()
    assert await a.store.get_raw(_tx(A)[1]) is not None


async def test_writes_made_under_an_earlier_lease_never_commit_under_a_later_one(
    two_nodes, pg_url
) -> None:
    """An actor made under epoch 1 whose ticket reaches the writer after the node took the
    project up again (epoch 3, node b had it at 2): its writes assert epoch 1 and fail, though
    the node holds the lease now; the new actor's land."""
    a, b = two_nodes
    first = await a.leases.acquire(A)
    await a.writer.write([lease_op(A, first.epoch), _tx(A, 0)])
    await expire_lease(pg_url, A)
    await b.leases.acquire(A)
    await expire_lease(pg_url, A)
    again = await a.leases.acquire(A)
    assert (first.epoch, again.epoch) == (1, 3)
    old = a.writer.submit([lease_op(A, first.epoch), _tx(A, 1)])
    new = a.writer.submit([lease_op(A, again.epoch), _tx(A, 2)])
    with pytest.raises(StaleEpoch):
        await old.wait()
    await new.wait()
    assert await a.store.get_raw(_tx(A, 1)[1]) is None
    assert await a.store.get_raw(_tx(A, 2)[1]) is not None
    # the assertion alone is checked too: no write of the project, still refused when stale
    with pytest.raises(StaleEpoch):
        await a.writer.write([lease_op(A, first.epoch), ("accounts", b"a:acc_2", b"{}")])


WAITING_ON_A_LOCK = "SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock'"


async def test_a_takeover_waits_for_a_commit_holding_the_lease(two_nodes, pg_url) -> None:
    """The fence holds the lease row (``FOR SHARE``) until the commit ends: a takeover that
    comes meanwhile waits for it, so no commit of the old owner lands after a takeover."""
    a, b = two_nodes
    await a.leases.acquire(A)
    await expire_lease(pg_url, A)
    taken: list[Any] = []
    in_flight = await trio.to_thread.run_sync(psycopg.connect, pg_url)
    try:  # a transaction holding the lease row as a's commit does
        await trio.to_thread.run_sync(
            in_flight.execute, "SELECT 1 FROM leases WHERE project_id = %s FOR SHARE", (A,)
        )
        async with trio.open_nursery() as nursery:

            async def take() -> None:
                taken.append(await b.leases.acquire(A))

            nursery.start_soon(take)
            with trio.fail_after(bound(5)):
                while True:  # PostgreSQL tells when its backend waits: no event to wait on
                    if await trio.to_thread.run_sync(execute, pg_url, WAITING_ON_A_LOCK):
                        break
                    await trio.sleep(0.01)
            assert not taken  # the takeover waits on the row
            await trio.to_thread.run_sync(in_flight.commit)
    finally:
        await trio.to_thread.run_sync(in_flight.close)
    assert taken[0].epoch == 2
