"""``edge backup``: a consistent copy taken by another process while the node keeps writing."""

from __future__ import annotations

import sys

import trio

from edge.store import keys
from edge.store.codec import pack
from edge.store.lmdb.store import open_store
from edge.store.writer import StoreWriter

A = "prj_aaaaaaaaaaaaaaaa"


def _pair(n: int) -> list:
    # every batch writes a pair that must never be seen half-written
    return [
        ("records", keys.record(A, keys.TRANSACTION, f"tx_{n:04d}"), pack({"n": n})),
        ("records", keys.record(A, keys.EVENT, f"evt_{n:04d}"), pack({"n": n})),
    ]


async def test_backup_while_writing_is_a_consistent_snapshot(tmp_path):
    data = tmp_path / "data"
    with open_store(data / "store") as store:
        writer = StoreWriter(store)
        async with trio.open_nursery() as nursery:
            await nursery.start(writer.run)
            for n in range(50):
                await writer.write(_pair(n))
            done = trio.Event()

            async def keep_writing() -> None:
                n = 50
                while not done.is_set():
                    await writer.write(_pair(n))
                    n += 1

            nursery.start_soon(keep_writing)
            result = await trio.run_process(
                [
                    sys.executable,
                    "-m",
                    "edge",
                    "backup",
                    str(tmp_path / "copy"),
                    "--data",
                    str(data),
                ],
                capture_stdout=True,
            )
            done.set()
            assert b"backup written" in result.stdout
            writer.close()
    with open_store(tmp_path / "copy" / "store") as copy:
        txs = await copy.scan(keys.prefix(A, keys.TRANSACTION))
        events = await copy.scan(keys.prefix(A, keys.EVENT))
        assert len(txs) == len(events) >= 50


async def test_backup_refuses_a_non_empty_destination(tmp_path):
    data = tmp_path / "data"
    with open_store(data / "store"):
        pass
    (tmp_path / "copy").mkdir()
    (tmp_path / "copy" / "something").write_text("x")
    result = await trio.run_process(
        [sys.executable, "-m", "edge", "backup", str(tmp_path / "copy"), "--data", str(data)],
        capture_stderr=True,
        check=False,
    )
    assert result.returncode == 1
    assert result.stderr.decode().startswith("edge: backup failed")
