"""The store interface the node is written against; two engines implement it: LMDB
(``edge.store.env.Store``, one node, the default) and PostgreSQL
(``edge.store.postgres.PostgresStore``, cluster mode).

Reads are awaited. Writes are never made here: callers ``submit`` ops to the single writer
(``edge.store.writer``), which calls the engine's ``commit`` in its worker thread.

An awaited read may give way to other tasks on PostgreSQL (a round trip in a worker thread) and
never does on LMDB; code that must not interleave keeps its own order (the project actor takes
one message at a time, whatever its reads do).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from edge.store.env import Op


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
    # True when an awaited read may give way to other tasks (a round trip), False when it
    # never does: the project actor then runs its handlers in the caller's task, at once.
    reads_give_way: bool

    async def heads(
        self, width: int, *, after: bytes | None = None, limit: int, db: str = "records"
    ) -> list[bytes]:
        """The distinct first ``width`` bytes of keys, in key order, past ``after``."""

    def disk_room(self) -> int | None:
        """Bytes the store may still grow by on this node's disk; None when its disk is not
        this node's (a PostgreSQL server's)."""

    def commit(self, op_lists: Sequence[Sequence[Op]]) -> None:
        """Apply the lists of ops in order, all or nothing, in one transaction; called by the
        writer in its worker thread, one call at a time."""

    def close(self) -> None: ...
