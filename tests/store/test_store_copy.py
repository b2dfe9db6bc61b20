"""The copy between the engines (edge.store.copy) on its own: every database byte for byte, in
both directions, through many batches; batches bounded and taken as the source is read; and a
node starting on a PostgreSQL target in the middle of a copy waits for it and finds it whole."""

from __future__ import annotations

import random
import threading
from itertools import count
from pathlib import Path

import trio
from support.postgres import require_psycopg

require_psycopg()

from edge.store.copy import copy_store  # noqa: E402
from edge.store.engine import (  # noqa: E402
    BATCH_BYTES,
    BATCH_KEYS,
    DATABASES,
    batches,
)
from edge.store.lmdb.store import STORE_DIR, open_store  # noqa: E402
from edge.store.postgres.copy import postgres_target  # noqa: E402
from edge.store.postgres.store import MAX_KEY, TABLES, open_postgres_store  # noqa: E402
from edge.store.sealcheck import CANARY_KEY, claim  # noqa: E402
from edge.store.writer import open_writer  # noqa: E402


def _contents(rng: random.Random) -> dict[str, dict[bytes, bytes]]:
    """Keys of every length LMDB takes (1 to MAX_KEY bytes, zero and 0xff bytes among them)
    and values up to 64 KiB: past BATCH_KEYS keys in one database and past BATCH_BYTES."""
    out: dict[str, dict[bytes, bytes]] = {}
    for db in DATABASES:
        keys = {
            rng.randbytes(rng.choice((1, 2, 20, 64, MAX_KEY)))
            for _ in range(2500 if db == "records" else 50)
        }
        keys |= {b"\x00", b"\xff" * MAX_KEY, b"prj_" + b"\xff" * 16}
        out[db] = {key: rng.randbytes(rng.choice((0, 1, 100, 3000, 65536))) for key in keys}
    return out


def _lmdb(data: Path) -> dict[str, dict[bytes, bytes]]:
    with open_store(data / STORE_DIR, 2**30) as store:
        return {db: dict(store.scan_sync(b"", db=db)) for db in DATABASES}


async def _postgres(url: str) -> dict[str, dict[bytes, bytes]]:
    out = {}
    async with open_postgres_store(url) as store:
        for db in DATABASES:
            out[db] = dict(await store.scan(b"", db=db))
    return out


async def test_every_database_goes_over_and_back_byte_for_byte(tmp_path, pg_url) -> None:
    contents = _contents(random.Random(28))
    assert sum(len(k) + len(v) for k, v in contents["records"].items()) > 2 * BATCH_BYTES
    with open_store(tmp_path / "first" / STORE_DIR, 2**30) as store:
        store.commit(
            [[(db, key, value) for db in DATABASES for key, value in contents[db].items()]]
        )

    there = await trio.to_thread.run_sync(copy_store, str(tmp_path / "first"), pg_url)
    assert there == {db: len(contents[db]) for db in DATABASES}
    assert await _postgres(pg_url) == contents

    back = await trio.to_thread.run_sync(copy_store, pg_url, str(tmp_path / "back"))
    assert back == there
    assert _lmdb(tmp_path / "back") == contents
    assert {p.name for p in (tmp_path / "back").iterdir()} == {STORE_DIR, "node.lock"}


def test_batches_are_bounded_and_taken_as_the_source_is_read() -> None:
    big = b"v" * (BATCH_BYTES // 3)
    served = count()

    def endless():  # a source that never ends: a batch must come before it is read whole
        for n in served:
            yield n.to_bytes(8, "big"), big if n % 1000 == 7 else b"v"

    taken = batches(endless())
    for _ in range(20):
        batch = next(taken)
        assert 0 < len(batch) <= BATCH_KEYS
        assert sum(len(k) + len(v) for k, v in batch) < BATCH_BYTES + len(big) + 16
    assert next(served) < 20 * BATCH_KEYS + 2


async def test_a_node_starting_on_the_target_mid_copy_waits_and_finds_it_whole(pg_url) -> None:
    copying, finish = threading.Event(), threading.Event()

    def copy_under_way() -> None:
        with postgres_target(pg_url) as write:
            write("meta", [(CANARY_KEY, b"the copy's canary")])
            copying.set()
            finish.wait(20)

    claimed: list[bytes] = []
    async with (
        trio.open_nursery() as nursery,
        open_postgres_store(pg_url) as store,
        open_writer(store) as writer,
    ):
        nursery.start_soon(trio.to_thread.run_sync, copy_under_way)
        await trio.to_thread.run_sync(copying.wait)
        # the node finds no canary yet (the copy is not committed) and claims its own
        assert await store.get_raw(CANARY_KEY, db="meta") is None

        async def node_claims() -> None:
            claimed.append(await claim(store, writer, CANARY_KEY, b"a new node's canary"))

        nursery.start_soon(node_claims)
        await trio.sleep(0.5)
        assert claimed == []  # it waits for the copy, holding the tables
        finish.set()
    assert claimed == [b"the copy's canary"]
    assert set(TABLES) == set(DATABASES)
