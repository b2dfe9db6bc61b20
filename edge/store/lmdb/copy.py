"""The LMDB side of ``edge.store.copy``: a data dir's store read in one read transaction, and
one built beside it and put in its place once whole, each under the data dir's lock (the node
must be stopped, and none starts meanwhile); each the interface's neutral stream of batches."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import lmdb

from edge import datadir
from edge.store.engine import DATABASES, Batch, CopyRefused, Source, Target, batches
from edge.store.lmdb.store import STORE_DIR, Store, open_environment, private_dir

# a node's default map; LMDB takes the file's own size where that is larger
MAP_SIZE = 64 * 2**30
COPYING_DIR = STORE_DIR + ".copying"


@contextmanager
def lmdb_source(data: Path) -> Iterator[Source]:
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
def lmdb_target(data: Path) -> Iterator[Target]:
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
