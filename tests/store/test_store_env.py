"""The LMDB environment, key schema and codec."""

from __future__ import annotations

import msgpack
import pytest
import trio

from edge.store import keys
from edge.store.codec import SCHEMA_VERSION, SchemaError, pack, unpack
from edge.store.lmdb.store import open_store
from edge.store.writer import open_writer

A = "prj_aaaaaaaaaaaaaaaa"
B = "prj_bbbbbbbbbbbbbbbb"
A_NEXT = "prj_aaaaaaaaaaaaaaab"


def test_codec_round_trip_keeps_types():
    record = {
        "id": "tx_1",
        "amount": 1999,
        "raw": b"\x00\xff",
        "meta": {"k": "v"},
        "none": None,
        "flag": True,
    }
    assert unpack(pack(record)) == record


def test_codec_refuses_a_newer_schema():
    raw = msgpack.packb({"_v": SCHEMA_VERSION + 1, "id": "x"}, use_bin_type=True)
    with pytest.raises(SchemaError):
        unpack(raw)


def test_keys_are_fixed_width_and_refuse_bad_project_ids():
    assert keys.record(A, keys.TRANSACTION, "tx_X").startswith(A.encode() + b"T")
    with pytest.raises(ValueError):
        keys.project("prj_short")


async def _write(store, ops):
    async with open_writer(store) as writer:
        await writer.write(ops)


async def test_reopen_keeps_data(tmp_path):
    with open_store(tmp_path / "s", map_size=2**26) as store:
        await _write(store, [("records", keys.project(A), pack({"id": A}))])
    with open_store(tmp_path / "s", map_size=2**26) as store:
        assert await store.get(keys.project(A)) == {"id": A}


async def test_prefix_scan_stays_in_one_project_and_kind(tmp_path):
    ops = []
    for project in (A, A_NEXT, B):
        for n in range(3):
            ops.append(
                (
                    "records",
                    keys.record(project, keys.TRANSACTION, f"tx_{n}"),
                    pack({"p": project, "n": n}),
                )
            )
            ops.append(
                ("records", keys.record(project, keys.EVENT, f"evt_{n}"), pack({"p": project}))
            )
    with open_store(tmp_path / "s", map_size=2**26) as store:
        await _write(store, ops)
        prefix = keys.prefix(A, keys.TRANSACTION)
        rows = [unpack(v) for _, v in await store.scan(prefix)]
        assert [(r["p"], r["n"]) for r in rows] == [(A, 0), (A, 1), (A, 2)]
        backwards = [unpack(v)["n"] for _, v in await store.scan(prefix, reverse=True)]
        assert backwards == [2, 1, 0]
        after_first = await store.scan(prefix, after=keys.record(A, keys.TRANSACTION, "tx_0"))
        assert [unpack(v)["n"] for _, v in after_first] == [1, 2]
        before_last = await store.scan(
            prefix, after=keys.record(A, keys.TRANSACTION, "tx_2"), reverse=True
        )
        assert [unpack(v)["n"] for _, v in before_last] == [1, 0]
        assert len(await store.scan(prefix, limit=2)) == 2
        assert await store.scan(keys.prefix(B, keys.SUBSCRIPTION)) == []


async def test_a_read_sees_every_commit_that_ended_before_it(tmp_path):
    """The loop's reads share a read transaction; each commit (in the writer's thread) makes
    the next read begin a new one, so no read sees an older store than the last commit."""
    key = keys.project(A)
    with open_store(tmp_path / "s", map_size=2**26) as store:
        assert await store.get(key) is None  # the shared read begins here, before any write
        for n in range(3):
            await _write(store, [("records", key, pack({"id": A, "n": n}))])
            assert (await store.get(key) or {})["n"] == n
        await _write(store, [("records", key, None)])
        assert await store.get(key) is None


async def test_a_read_off_the_loop_thread_has_a_transaction_of_its_own(tmp_path):
    key = keys.project(A)
    with open_store(tmp_path / "s", map_size=2**26) as store:
        await _write(store, [("records", key, pack({"id": A}))])
        assert await store.get(key) == {"id": A}  # the loop's shared read
        assert await trio.to_thread.run_sync(store.get_sync, key) == {"id": A}
        await _write(store, [("records", key, pack({"id": A, "n": 1}))])
        assert await trio.to_thread.run_sync(store.get_sync, key) == {"id": A, "n": 1}
        assert await store.get(key) == {"id": A, "n": 1}


async def test_the_loops_gets_and_scans_read_one_store(tmp_path):
    """A write the writer has not said it committed (here: one made beside it, on the
    environment) is seen by no read of the loop, neither a get nor a scan, until a commit of
    the writer's ends: a scan never shows what a get then denies."""
    key = keys.record(A, keys.TRANSACTION, "tx_1")
    prefix = keys.prefix(A, keys.TRANSACTION)
    with open_store(tmp_path / "s", map_size=2**26) as store:
        assert await store.get(key) is None and await store.scan(prefix) == []
        with store.env.begin(write=True, db=store.dbs["records"]) as txn:
            txn.put(key, pack({"id": "tx_1"}))
        assert await store.scan(prefix) == [] and await store.get(key) is None
        await _write(store, [("records", keys.project(A), pack({"id": A}))])
        assert [k for k, _ in await store.scan(prefix)] == [key]
        assert await store.get(key) == {"id": "tx_1"}
