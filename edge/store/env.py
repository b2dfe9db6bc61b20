"""The LMDB environment and the read helpers.

The node reads through the store interface (``edge.store.engine.Engine``): ``await
store.get/get_raw/scan/heads``. LMDB's reads are short read-only transactions on the memory
map, so its awaited reads finish without a checkpoint: on this engine an actor's handler that
reads still runs to its end without giving way, as before reads were awaited. py-lmdb always
sets MDB_NOTLS, so the plain ``*_sync`` reads may also run in worker threads (tools, backup).
Writes go through ``edge.store.writer`` only, which calls ``Store.commit`` in its thread.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import lmdb

from edge.store.codec import unpack

DATABASES = ("records", "apikeys", "meta", "outbox", "notify", "accounts")
STORE_DIR = "store"  # the store's directory, in a data dir and in a backup

# (database name, key, value); value None deletes the key.
Op = tuple[str, bytes, bytes | None]

# Not a database: ``(LEASE, project id, epoch)`` asserts that the ops beside it were made under
# that lease of the project (cluster mode; ``lease_op``). PostgreSQL's commit checks it, in
# its own transaction; LMDB (one node, no leases) has nothing to check and skips it.
LEASE = "lease"


def lease_op(project_id: str, epoch: int) -> Op:
    return (LEASE, project_id.encode("ascii"), str(epoch).encode("ascii"))


# Not a database either: ``expect_op(db, key, raw)`` makes its ticket fail with ``Contended``,
# writing nothing, unless ``key`` holds exactly ``raw`` (None: no value) when the ticket commits.
# A read-then-write that two nodes may run at once (an e-mail taken, a one-time code spent)
# asserts what it read; both engines check it inside their write transaction. It holds against
# every write on LMDB (one writer), and against the writes that assert the same key on
# PostgreSQL: a key that is ever asserted is written only with an assertion.
EXPECT = "expect"


class Contended(Exception):
    """A ticket's expectation did not hold: another write changed what it read. ``ticket``:
    its place in the group being committed (the writer commits the others without it)."""

    def __init__(self, db: str, ticket: int) -> None:
        super().__init__(db, ticket)
        self.ticket = ticket


def expect_op(db: str, key: bytes, raw: bytes | None) -> Op:
    return (EXPECT, db.encode("ascii") + b"\x00" + key, raw)


def expected_place(op_key: bytes) -> tuple[str, bytes]:
    """The (database, key) an ``expect_op`` is about."""
    db, _, key = op_key.partition(b"\x00")
    return db.decode("ascii"), key


class Store:
    reads_give_way = False  # reads touch the memory map only (edge.store.engine)

    def __init__(self, env: lmdb.Environment) -> None:
        self.env = env
        self.dbs = {name: env.open_db(name.encode()) for name in DATABASES}

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

    def get_raw_sync(self, key: bytes, db: str = "records") -> bytes | None:
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
        with self.env.begin(db=self.dbs[db], buffers=False) as txn:
            cursor = txn.cursor()
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
        with self.env.begin(db=self.dbs[db], buffers=False) as txn:
            cursor = txn.cursor()
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
        the same thread."""
        with self.env.begin(write=True) as txn:
            for index, ops in enumerate(op_lists):
                for db, key, value in ops:
                    if db == LEASE:
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


def prefix_end(prefix: bytes) -> bytes | None:
    """The smallest key greater than every key starting with ``prefix``."""
    trimmed = prefix.rstrip(b"\xff")
    if not trimmed:
        return None
    return trimmed[:-1] + bytes([trimmed[-1] + 1])


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
