"""A copy of the whole store into an empty store of the other engine (``edge cluster
copy-store``): from a data dir's LMDB store into PostgreSQL to start a cluster, and back.

Every database of ``env.DATABASES`` is copied, keys and values byte for byte: both engines keep
the same databases, keys and values (``edge.store.postgres``), so a node reads the copy as it
read the original. The leases and heartbeats of a PostgreSQL store are not copied: they belong
to the nodes that ran on it, and nodes start over with new leases.

The copy reads one consistent snapshot of the source and writes the target in batches of at most
``BATCH_KEYS`` keys or ``BATCH_BYTES`` bytes, so neither side is ever held in memory whole:

- an LMDB source is read in one read transaction, under its data dir's lock, so its node must be
  stopped (what it wrote after the snapshot would be lost) and none starts meanwhile;
- a PostgreSQL source is read in one ``REPEATABLE READ`` snapshot, and is refused while a node
  beats its heartbeat or holds a live lease on it, for the same reason
  (``edge.store.postgres_copy``);
- an LMDB target is built beside the data dir's store (``store.copying``), under the data dir's
  lock, and takes its place once whole: a failed copy leaves no store behind;
- a PostgreSQL target is written in one transaction that holds its store's tables against
  writes: a failed copy leaves it empty, and a node that starts on it meanwhile waits for the
  copy and then reads it whole.

A target that holds any key is refused: a copy never merges two stores.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager, suppress
from pathlib import Path
from typing import Any

import lmdb

from edge import datadir
from edge.store.env import DATABASES, STORE_DIR, Store, open_environment, private_dir

BATCH_KEYS = 1000
BATCH_BYTES = 4 * 2**20
# a node's default map; LMDB takes the file's own size where that is larger
MAP_SIZE = 64 * 2**30
COPYING_DIR = STORE_DIR + ".copying"

Batch = list[tuple[bytes, bytes]]
Reader = Callable[[str], Iterator[Batch]]  # a database's keys and values, in key order
Writer = Callable[[str, Batch], None]


class CopyRefused(Exception):
    """The copy cannot be made as asked; the message is one line: why, and what to do."""


def is_postgres(where: str) -> bool:
    return where.startswith(("postgresql://", "postgres://"))


def copy_store(source: str, target: str) -> dict[str, int]:
    """Copy the store at ``source`` into the empty store at ``target`` (each a data dir or a
    ``postgresql://`` URL); the number of keys copied, by database."""
    if _same(source, target):
        raise CopyRefused("the source and the target are the same store")
    with ExitStack() as stack:
        read = stack.enter_context(_source(source))
        write = stack.enter_context(_target(target))
        copied = {}
        for db in DATABASES:
            copied[db] = 0
            for batch in read(db):
                write(db, batch)
                copied[db] += len(batch)
        return copied


def batches(pairs: Iterable[tuple[bytes, bytes]]) -> Iterator[Batch]:
    """``pairs`` in batches of at most ``BATCH_KEYS`` keys and about ``BATCH_BYTES`` bytes."""
    batch: Batch = []
    size = 0
    for key, value in pairs:
        batch.append((key, value))
        size += len(key) + len(value)
        if len(batch) >= BATCH_KEYS or size >= BATCH_BYTES:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


def _same(source: str, target: str) -> bool:
    if is_postgres(source) or is_postgres(target):
        return source == target
    return Path(source).resolve() == Path(target).resolve()


def _source(where: str) -> AbstractContextManager[Reader]:
    if is_postgres(where):
        from edge.store.postgres_copy import postgres_source

        return postgres_source(where)
    return _lmdb_source(Path(where))


def _target(where: str) -> AbstractContextManager[Writer]:
    if is_postgres(where):
        from edge.store.postgres_copy import postgres_target

        return postgres_target(where)
    return _lmdb_target(Path(where))


@contextmanager
def _lmdb_source(data: Path) -> Iterator[Reader]:
    store_dir = data / STORE_DIR
    if not (store_dir / "data.mdb").exists():
        raise CopyRefused(f"no store at {store_dir} (give the data dir of the node to copy)")
    with _node_stopped(data, "from"):
        env = open_environment(store_dir, MAP_SIZE, readonly=True)
        try:
            handles = _databases(env)
            with env.begin(buffers=False) as txn:

                def read(db: str) -> Iterator[Batch]:
                    if db not in handles:  # a store older than the database: nothing in it
                        return iter(())
                    return batches(txn.cursor(db=handles[db]).iternext())

                yield read
        finally:
            env.close()


@contextmanager
def _lmdb_target(data: Path) -> Iterator[Writer]:
    private_dir(data)
    store_dir, copying = data / STORE_DIR, data / COPYING_DIR
    with _node_stopped(data, "into"):
        if (store_dir / "data.mdb").exists():
            _refuse_keys(store_dir, data)
        shutil.rmtree(copying, ignore_errors=True)  # left by a copy that was cut short
        env = open_environment(copying, MAP_SIZE)
        try:
            dbs = Store(env).dbs

            def write(db: str, batch: Batch) -> None:
                with env.begin(write=True, db=dbs[db]) as txn:
                    for key, value in batch:
                        txn.put(key, value)

            yield write
            env.sync(True)
            env.close()
            # the empty store it replaces (LMDB keeps its files): the copy takes its place whole
            shutil.rmtree(store_dir, ignore_errors=True)
            os.replace(copying, store_dir)
            _sync_dir(data)
        except BaseException:
            env.close()
            shutil.rmtree(copying, ignore_errors=True)
            raise


def _databases(env: lmdb.Environment) -> dict[str, Any]:
    """The handles of the store's databases that exist, opened without writing."""
    found = {}
    for db in DATABASES:
        with suppress(lmdb.NotFoundError):
            found[db] = env.open_db(db.encode(), create=False)
    return found


def _refuse_keys(store_dir: Path, data: Path) -> None:
    env = open_environment(store_dir, MAP_SIZE, readonly=True)
    try:
        handles = _databases(env)  # before the transaction: it sees only handles opened before
        with env.begin() as txn:
            held = [db for db, handle in handles.items() if txn.stat(handle)["entries"]]
    finally:
        env.close()
    if held:
        raise CopyRefused(
            f"the data dir {data} already holds a store (keys in {', '.join(held)}): copy "
            "into a new or empty data dir"
        )


@contextmanager
def _node_stopped(data: Path, way: str) -> Iterator[None]:
    """The data dir's lock, held as a node holds it: no node runs on it, none starts."""
    try:
        with datadir.locked(data):
            yield
    except datadir.DataDirInUse:
        lost = " (what it writes after the copy's snapshot would be lost)" if way == "from" else ""
        raise CopyRefused(
            f"a node is running on the data dir {data}: stop it before copying {way} it{lost}"
        ) from None


def _sync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
