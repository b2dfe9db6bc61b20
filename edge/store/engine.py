"""The store interface the node is written against, and its vocabulary: the databases, the ops a
write is made of, the errors a commit may end with, the features in which the engines differ,
and the stream a store is copied through. Two engines implement it, each a package that imports
only this module (and the value codec): LMDB (``edge.store.lmdb``, one node, the default) and
PostgreSQL (``edge.store.postgres``, cluster mode).

Reads are awaited. Writes are never made here: callers ``submit`` ops to the single writer
(``edge.store.writer``), which calls the engine's ``commit`` in its worker thread.

Code that must know which engine it has asks its ``features`` by name, never its class.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from edge.errors import Unavailable
from edge.store.keys import PROJECT_ID_LEN

DATABASES = ("records", "apikeys", "meta", "outbox", "notify", "accounts")

# (database name, key, value); value None deletes the key.
Op = tuple[str, bytes, bytes | None]

# Not a database: ``(LEASE, project id, epoch)`` asserts that the ops beside it were made under
# that lease of the project (cluster mode; ``lease_op``). An engine opened with a node's leases
# (PostgreSQL's, in cluster mode) checks it in its own transaction; the others skip it.
LEASE = "lease"


def lease_op(project_id: str, epoch: int) -> Op:
    return (LEASE, project_id.encode("ascii"), str(epoch).encode("ascii"))


def project_of(records_key: bytes) -> str:
    """The project a ``records`` key belongs to (its first bytes): the one a fenced commit
    of it checks the lease of."""
    return records_key[:PROJECT_ID_LEN].decode("ascii", "replace")


# Not a database either: ``expect_op(db, key, raw)`` makes its ticket fail with ``Contended``,
# writing nothing, unless ``key`` holds exactly ``raw`` (None: no value) when the ticket commits.
# A read-then-write that two nodes may run at once (an e-mail taken, a one-time code spent)
# asserts what it read; every engine checks it inside its write transaction.
EXPECT = "expect"


def expect_op(db: str, key: bytes, raw: bytes | None) -> Op:
    return (EXPECT, db.encode("ascii") + b"\x00" + key, raw)


def expected_place(op_key: bytes) -> tuple[str, bytes]:
    """The (database, key) an ``expect_op`` is about."""
    db, _, key = op_key.partition(b"\x00")
    return db.decode("ascii"), key


# The claim rule. An expectation that a key has no value yet (a claim: ``expect_op(db, key,
# None)``) holds against every write on LMDB (one writer), but on PostgreSQL only against the
# writes that assert the same key: a row that is there is locked against any write, an absent
# one only by the lock of its key that an expectation takes. A plain write could create the
# key between a claim's check and its commit, and the claim would overwrite it. So a key that
# is ever claimed is given a value only by a ticket that asserts it (any expectation of that
# key; deleting it needs none: its row is there to lock). These are the keys claimed, by
# database: their prefixes. Both engines refuse a ticket that breaks the rule
# (``check_claims``), so breaking it fails on LMDB too, where it would not race.
CLAIMED: dict[str, tuple[bytes, ...]] = {
    "accounts": (b"e:",),  # an e-mail finds one account (edge.store.accounts.email_key)
    "meta": (b"seal-canary", b"signing-key-id"),  # the first node's (sealcheck, signcheck)
}


class Contended(Exception):
    """A ticket's expectation did not hold: another write changed what it read. ``ticket``:
    its place in the group being committed (the writer commits the others without it)."""

    def __init__(self, db: str, ticket: int) -> None:
        super().__init__(db, ticket)
        self.ticket = ticket


class Unclaimed(Exception):
    """A ticket gives a claimed key (``CLAIMED``) a value without asserting it: a bug in the
    caller, refused before anything of the ticket is written."""


class StoreUnavailable(Unavailable):
    """The store cannot commit now: no room in its map or on its disk, the disk fails, or its
    server is out of reach. ``told``: the engine has logged the outage itself, once."""

    told = False


def claimed(db: str, key: bytes) -> bool:
    return any(key.startswith(prefix) for prefix in CLAIMED.get(db, ()))


def check_claims(ops: Sequence[Op]) -> None:
    """Raise ``Unclaimed`` if ``ops`` (one ticket's) give a claimed key a value without
    asserting it. Every engine's ``commit`` runs it on each ticket."""
    for db, key, value in ops:
        if value is not None and db in CLAIMED and claimed(db, key) and not _asserts(ops, db, key):
            raise Unclaimed(f"{db} key {key!r} is given a value without asserting it")


def _asserts(ops: Sequence[Op], db: str, key: bytes) -> bool:
    place = expect_op(db, key, None)[1]
    return any(kind == EXPECT and at == place for kind, at, _ in ops)


def prefix_end(prefix: bytes) -> bytes | None:
    """The smallest key greater than every key starting with ``prefix``."""
    trimmed = prefix.rstrip(b"\xff")
    if not trimmed:
        return None
    return trimmed[:-1] + bytes([trimmed[-1] + 1])


@dataclass(frozen=True)
class Features:
    """Where the engines differ, by name (as Django's backends name theirs)."""

    # An awaited read may give way to other tasks (a round trip): on LMDB it never does, so
    # the project actor runs its handlers in the caller's task, at once.
    reads_give_way: bool
    # The store's files are on this node's disk, so ``disk_room`` can say how much it may
    # still grow; a server's disk is out of the node's sight.
    local_disk: bool


class Reader(Protocol):
    """The point reads and scans (what the row helpers of ``edge.store`` take)."""

    async def get_raw(self, key: bytes, db: str = "records") -> bytes | None:
        """The raw value at ``key``, or None."""

    async def get(self, key: bytes, db: str = "records") -> dict[str, Any] | None:
        """The unpacked record at ``key``, or None."""

    async def scan(
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


class Engine(Reader, Protocol):
    features: Features

    async def heads(
        self, width: int, *, after: bytes | None = None, limit: int, db: str = "records"
    ) -> list[bytes]:
        """The distinct first ``width`` bytes of keys, in key order, past ``after``."""

    def disk_room(self) -> int | None:
        """Bytes the store may still grow by on this node's disk; None without
        ``features.local_disk``."""

    def commit(self, op_lists: Sequence[Sequence[Op]]) -> None:
        """Apply the lists of ops in order, all or nothing, in one transaction; called by the
        writer in its worker thread, one call at a time. Each list is one ticket: ``Contended``
        names the first whose expectation fails, ``Unclaimed`` refuses one that breaks the
        claim rule, ``StoreUnavailable`` says the store cannot commit now."""

    def close(self) -> None: ...


# -- the copy between engines (``edge.store.copy``): a neutral stream of key-value batches ----

BATCH_KEYS = 1000
BATCH_BYTES = 4 * 2**20

Batch = list[tuple[bytes, bytes]]
Source = Callable[[str], Iterator[Batch]]  # a database's keys and values, in key order
Target = Callable[[str, Batch], None]


class CopyRefused(Exception):
    """The copy cannot be made as asked; the message is one line: why, and what to do."""


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
