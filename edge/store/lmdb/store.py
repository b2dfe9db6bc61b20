"""The LMDB engine: one environment of named databases in the data dir, one node.

The node reads through the store interface (``edge.store.engine.Engine``): ``await
store.get/get_raw/scan/heads``. LMDB's reads are short read-only transactions on the memory
map, so its awaited reads finish without a checkpoint: on this engine an actor's handler that
reads still runs to its end without giving way, as before reads were awaited. py-lmdb always
sets MDB_NOTLS, so the plain ``*_sync`` reads may also run in worker threads (tools, backup).
Writes go through ``edge.store.writer`` only, which calls ``Store.commit`` in its thread.
"""

from __future__ import annotations

import errno
import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import lmdb

from edge.store.codec import unpack
from edge.store.engine import (
    DATABASES,
    EXPECT,
    LEASE,
    Contended,
    Features,
    Op,
    StoreUnavailable,
    check_claims,
    expected_place,
    prefix_end,
)

STORE_DIR = "store"  # the store's directory, in a data dir and in a backup

# lmdb's own errors for "no room" and a failed environment, and the system's for a disk
_UNAVAILABLE = (lmdb.MapFullError, lmdb.DiskError, lmdb.PanicError)
_DISK_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EROFS})


class Store:
    # reads touch the memory map only; the map's file is on this disk
    features = Features(reads_give_way=False, local_disk=True)

    def __init__(self, env: lmdb.Environment) -> None:
        self.env = env
        self.dbs = {name: env.open_db(name.encode()) for name in DATABASES}
        # the event loop's reads (gets and scans alike) share one read transaction until the
        # writer says a commit ended: beginning one costs four times a read, and reads never go
        # backwards (a scan, then a get, see one store even while the writer's thread waits
        # for the interpreter's lock after a commit). Only the thread that made the store
        # keeps one.
        self._reader_thread = threading.get_ident()
        self._reading: lmdb.Transaction[bytes] | None = None
        self._read_at = -1  # the commit count ``_reading`` began after
        self._commits = 0  # counted by the writer's thread once a commit is durable

    def _read_txn(self) -> lmdb.Transaction[bytes] | None:
        """The loop thread's read transaction, begun anew once a commit has ended since (it
        sees every commit made before it); None in any other thread."""
        if threading.get_ident() != self._reader_thread:
            return None
        commits = self._commits
        if self._reading is None or self._read_at != commits:
            if self._reading is not None:
                self._reading.abort()
            self._reading = self.env.begin(buffers=False)
            self._read_at = commits
        return self._reading

    # -- the store interface: awaited, but never a checkpoint on this engine ----------------

    async def get_raw(self, key: bytes, db: str = "records") -> bytes | None:
        return self.get_raw_sync(key, db)

    async def get(self, key: bytes, db: str = "records") -> dict[str, Any] | None:
        return self.get_sync(key, db)

    # the options are ``scan_sync``'s and ``heads_sync``'s (the interface, ``Engine``, names them)

    async def scan(self, prefix: bytes, **options: Any) -> list[tuple[bytes, bytes]]:
        return self.scan_sync(prefix, **options)

    async def heads(self, width: int, **options: Any) -> list[bytes]:
        return self.heads_sync(width, **options)

    # -- LMDB's own plain reads ---------------------------------------------------------

    @contextmanager
    def _snapshot(self) -> Iterator[lmdb.Transaction[bytes]]:
        """The loop thread's shared read transaction (left open), or one of this call's own."""
        shared = self._read_txn()
        if shared is not None:
            yield shared
            return
        with self.env.begin(buffers=False) as txn:
            yield txn

    def get_raw_sync(self, key: bytes, db: str = "records") -> bytes | None:
        # ``_snapshot`` written out: the hottest read, where a context manager costs more
        # than the get itself
        shared = self._read_txn()
        if shared is not None:
            return shared.get(key, db=self.dbs[db])
        with self.env.begin(db=self.dbs[db], buffers=False) as txn:
            return txn.get(key)

    def get_sync(self, key: bytes, db: str = "records") -> dict[str, Any] | None:
        raw = self.get_raw_sync(key, db)
        return None if raw is None else unpack(raw)

    def scan_sync(
        self,
        prefix: bytes,
        *,
        after: bytes | None = None,
        reverse: bool = False,
        limit: int | None = None,
        db: str = "records",
    ) -> list[tuple[bytes, bytes]]:
        """Keys and raw values under ``prefix`` in key order (or reversed), strictly past
        ``after`` (a full key) in the direction of travel."""
        out: list[tuple[bytes, bytes]] = []
        with self._snapshot() as txn, txn.cursor(db=self.dbs[db]) as cursor:
            if reverse:
                positioned = _seek_last_below(cursor, prefix, after)
                step = cursor.prev
            else:
                start = after + b"\x00" if after is not None and after >= prefix else prefix
                positioned = cursor.set_range(start)
                step = cursor.next
            while positioned:
                key = cursor.key()
                if not key.startswith(prefix):
                    break
                out.append((key, cursor.value()))
                if limit is not None and len(out) >= limit:
                    break
                positioned = step()
        return out

    def heads_sync(
        self, width: int, *, after: bytes | None = None, limit: int, db: str = "records"
    ) -> list[bytes]:
        """The distinct first ``width`` bytes of keys, in key order, past ``after``: one seek
        per head, however many keys lie under each (the project ids of the ``records``
        database, whose keys start with them)."""
        out: list[bytes] = []
        with self._snapshot() as txn, txn.cursor(db=self.dbs[db]) as cursor:
            start = prefix_end(after) if after is not None else b""
            positioned = start is not None and cursor.set_range(start)
            while positioned and len(out) < limit:
                head = bytes(cursor.key()[:width])
                out.append(head)
                following = prefix_end(head)
                positioned = following is not None and cursor.set_range(following)
        return out

    def commit(self, op_lists: Sequence[Sequence[Op]]) -> None:
        """Apply every list of ops, in order, in one write transaction (all or nothing). Called
        by the writer only, in one worker thread call: the transaction begins and commits in
        the same thread. No room in the map or on the disk, or a failing disk, is
        ``StoreUnavailable``."""
        try:
            with self.env.begin(write=True) as txn:
                for index, ops in enumerate(op_lists):
                    check_claims(ops)
                    self._apply(txn, index, ops)
            self._commits += 1
        except lmdb.Error as exc:
            if isinstance(exc, _UNAVAILABLE) or (exc.args and exc.args[-1] in _DISK_ERRNOS):
                raise StoreUnavailable(
                    "unavailable",
                    "The store cannot commit now (no room, or a disk fault); retry later.",
                ) from exc
            raise

    def _apply(self, txn: lmdb.Transaction, index: int, ops: Sequence[Op]) -> None:
        for db, key, value in ops:
            if db == LEASE:  # not fenced: one node
                continue
            if db == EXPECT:
                where, at = expected_place(key)
                if txn.get(at, db=self.dbs[where]) != value:
                    raise Contended(where, index)
                continue
            if value is None:
                txn.delete(key, db=self.dbs[db])
            else:
                txn.put(key, value, db=self.dbs[db])

    def disk_room(self) -> int:
        """Bytes the store's file may still grow by on its disk."""
        disk = os.statvfs(self.env.path())
        return disk.f_bavail * disk.f_frsize

    def close(self) -> None:
        if self._reading is not None and threading.get_ident() == self._reader_thread:
            self._reading.abort()
        self._reading = None
        self.env.close()


def _seek_last_below(cursor: lmdb.Cursor, prefix: bytes, before: bytes | None) -> bool:
    """Position on the last key under ``prefix`` that is below ``before`` (if given)."""
    end = prefix_end(prefix)
    # a ``before`` past the prefix's keys bounds nothing: seek from the prefix's end, not from
    # keys beyond it (whose predecessor would not be under the prefix)
    upper = end if before is None or (end is not None and before > end) else before
    if upper is None:
        return cursor.last()
    if cursor.set_range(upper):
        return cursor.prev()
    return cursor.last()


def private_dir(path: Path) -> None:
    """``path`` exists and only the node's user may enter it (CONTRACT 4.6: 0700)."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    path.chmod(0o700)


def open_environment(path: Path, map_size: int, readonly: bool = False) -> lmdb.Environment:
    private_dir(path)
    # lib_version=0 keeps the classic file format; sync/metasync stay on: durability comes
    # first, speed comes from group commit.
    return lmdb.open(
        str(path),
        map_size=map_size,
        max_dbs=len(DATABASES) + 2,
        subdir=True,
        sync=True,
        metasync=True,
        readonly=readonly,
        max_readers=512,
        lib_version=0,
        mode=0o600,  # the store's files: the node's user only
    )


@contextmanager
def open_store(path: Path, map_size: int = 64 * 2**30) -> Iterator[Store]:
    """The store at ``path`` (made if missing), closed on exit."""
    env = open_environment(path, map_size)
    store = Store(env)
    try:
        yield store
    finally:
        store.close()
