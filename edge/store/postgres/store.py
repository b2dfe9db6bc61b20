"""The PostgreSQL engine (cluster mode, issue 28): the store interface's databases and reads on
a server several nodes share, and a ``commit`` the single writer (``edge.store.writer``) calls
as it calls LMDB's.

Layout: one table per database of ``engine.DATABASES`` (``store_records``, ``store_apikeys``, ...),
each ``(key bytea PRIMARY KEY, value bytea NOT NULL)``, as LMDB keeps one B-tree per named
database. So a range scan needs no database column in its index, and the queue-like databases
(``outbox``, ``notify``: keys made and deleted all day) are vacuumed apart from ``records``.
Keys are compared as ``bytea``: byte by byte, a prefix before its extensions, which is LMDB's
order; no collation is involved. Keys are 1 to ``MAX_KEY`` bytes, as LMDB takes them, so a store
can move between the engines.

Reads are ``async``: each runs one statement (``heads``: one read-only snapshot) in a worker
thread on a connection of the store's own small pool (psycopg 3's sync API; the writer has one
connection of its own). A lost connection answers ``StoreUnavailable``.

A commit applies a group of op lists in ONE transaction. Inside a transaction only its outcome
is visible, so the ops are reduced to the last one of each key first: one upsert and one delete
statement a database, however many ops.

Fencing: a store opened with a ``Fence`` (a node's ``leases.Leases``) checks in the commit's
own transaction that every project whose ``records`` keys the group writes is leased to this
node at the epoch its writes were made under, still unexpired by PostgreSQL's clock, and holds
those lease rows ``FOR SHARE`` until the commit ends. That epoch is the one an op list asserts
(``engine.lease_op``: a project actor's writes carry the epoch it was made at, so an actor of an
earlier lease can never commit under a later one), else the one the node holds now. A takeover
(an ``UPDATE`` of the row) waits for the commit, or the commit sees the new owner and fails with
``StaleEpoch``, writing nothing. Only ``records`` keys name their project
(``engine.project_of``); the other databases are written either with a ``records`` key of the
same project in the same ticket (``apikeys``, ``meta``'s ``tx:`` owners, the outbox entries and
notifications an event makes) or by node-wide work that no lease covers yet (``accounts``, the
follow-up and notification workers, ``meta``'s probe and canary); see docs/cluster.md. A store
opened without a fence checks nothing (one node, or tools such as a copy between engines).

Expectations (``engine.expect_op``: a ticket writes only if a key still holds what it read) are
checked in the same transaction, under a transaction-scoped advisory lock per expected key, so
two nodes that read, then write the same account row are serialised: the later one fails with
``Contended`` and writes nothing. A plain write takes no such lock, hence the interface's claim
rule (``engine.CLAIMED``), which the commit checks as LMDB's does.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from functools import partial
from typing import Any, Protocol, TypeVar

import psycopg
import trio
from psycopg import sql

from edge.errors import Unavailable
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
    project_of,
)
from edge.store.postgres import grants
from edge.store.postgres.outage import Outage

log = logging.getLogger("edge.store")

T = TypeVar("T")

MAX_KEY = 511  # LMDB's largest key (its default build)
TABLES = {db: sql.Identifier(f"store_{db}") for db in DATABASES}
TABLE_NAMES = [*(f"store_{db}" for db in DATABASES), "nodes", "leases"]  # every table SCHEMA makes

SCHEMA: list[sql.SQL | sql.Composed] = [
    *(
        sql.SQL(
            "CREATE TABLE IF NOT EXISTS {} (key bytea PRIMARY KEY, value bytea NOT NULL)"
        ).format(table)
        for table in TABLES.values()
    ),
    sql.SQL(
        "CREATE TABLE IF NOT EXISTS nodes ("
        " node_id text PRIMARY KEY, address text NOT NULL, heartbeat_at timestamptz NOT NULL)"
    ),
    sql.SQL(
        "CREATE TABLE IF NOT EXISTS leases ("
        " project_id text PRIMARY KEY, owner text NOT NULL, epoch bigint NOT NULL,"
        " expires_at timestamptz NOT NULL)"
    ),
]
_UPSERT = {
    db: sql.SQL(
        "INSERT INTO {} (key, value) SELECT * FROM unnest(%s::bytea[], %s::bytea[])"
        " ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value"
    ).format(table)
    for db, table in TABLES.items()
}
_DELETE = {
    db: sql.SQL("DELETE FROM {} WHERE key = ANY(%s::bytea[])").format(table)
    for db, table in TABLES.items()
}
# Nodes starting together create the schema one at a time (CREATE ... IF NOT EXISTS races).
SCHEMA_LOCK = 0x65646765  # "edge"

_READ_LOCKED = {
    db: sql.SQL(
        "SELECT key, value FROM {} WHERE key = ANY(%s::bytea[]) ORDER BY key FOR UPDATE"
    ).format(table)
    for db, table in TABLES.items()
}
_LOCK_KEYS = sql.SQL("SELECT pg_advisory_xact_lock(k) FROM unnest(%s::bigint[]) AS k")

_FENCE = sql.SQL(
    "SELECT project_id, epoch FROM leases"
    " WHERE project_id = ANY(%s) AND owner = %s AND expires_at > clock_timestamp()"
    " ORDER BY project_id FOR SHARE"
)


class Fence(Protocol):
    """A node's leases, as a commit checks them."""

    node_id: str

    def epoch(self, project_id: str) -> int | None:
        """The epoch this node holds the project's lease at, or None."""


class StaleEpoch(Unavailable):
    """A commit wrote a project this node no longer holds (its lease expired, was taken over or
    moved): nothing of it was written. An ``Unavailable`` (retryable, 503), not a
    ``StoreUnavailable``: the store is fine, another node serves the project, and the caller's
    retry belongs there."""

    def __init__(self, projects: Sequence[str], node_id: str) -> None:
        self.projects = tuple(projects)
        super().__init__(
            "unavailable",
            f"node {node_id} no longer holds the lease of {', '.join(self.projects)}; "
            "the project is served elsewhere now, retry",
        )


class ConnectionPool:
    """At most ``size`` connections (autocommit), each used by one worker thread at a time."""

    def __init__(self, url: str, size: int, outage: Outage | None = None) -> None:
        self.url = url
        self.outage = outage or Outage()
        self._limiter = trio.CapacityLimiter(size)
        self._idle: list[psycopg.Connection[Any]] = []
        self._closed = False

    async def run(self, work: Callable[[psycopg.Connection[Any]], T]) -> T:
        """``work(connection)`` in a worker thread; a lost connection is ``StoreUnavailable``."""
        return await trio.to_thread.run_sync(self._run, work, limiter=self._limiter)

    def _run(self, work: Callable[[psycopg.Connection[Any]], T]) -> T:
        try:
            conn = self._take()
        except StoreUnavailable as exc:
            self.outage.failed(exc.__cause__ or exc)
            raise
        try:
            done = work(conn)
        except psycopg.OperationalError as exc:
            self.outage.failed(exc)
            if conn.broken:  # the server restarted: the idle ones are as dead, not yet told
                self.close_idle()
            raise _unavailable(exc) from exc
        finally:
            if self._closed or conn.broken:
                conn.close()
            else:
                self._idle.append(conn)
        self.outage.ok()
        return done

    def _take(self) -> psycopg.Connection[Any]:
        try:
            return self._idle.pop()
        except IndexError:
            return _connect(self.url)

    def close_idle(self) -> None:
        while True:
            try:
                conn = self._idle.pop()  # other threads pop too: no look before
            except IndexError:
                return
            conn.close()

    def close(self) -> None:
        self._closed = True
        self.close_idle()


class PostgresStore:
    """The six databases in PostgreSQL; reads as LMDB's, each a round trip."""

    # each read a round trip; the server's disk is its own
    features = Features(reads_give_way=True, local_disk=False)

    def __init__(self, url: str, *, fence: Fence | None = None, readers: int = 4) -> None:
        self.url = url
        self.fence = fence
        self.outage = Outage()
        self.pool = ConnectionPool(url, readers, self.outage)
        self._writer: psycopg.Connection[Any] | None = None  # the writer thread's own

    def disk_room(self) -> None:
        return None  # the server's disk, out of this node's sight

    async def create_schema(self) -> None:
        await self.pool.run(create_schema)

    async def get_raw(self, key: bytes, db: str = "records") -> bytes | None:
        query = sql.SQL("SELECT value FROM {} WHERE key = %s").format(TABLES[db])
        rows = await self.pool.run(partial(_fetch, query, (key,)))
        return rows[0][0] if rows else None

    async def get(self, key: bytes, db: str = "records") -> dict[str, Any] | None:
        raw = await self.get_raw(key, db)
        return None if raw is None else unpack(raw)

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
        where = [sql.SQL("key >= %s")]
        params: list[Any] = [prefix]
        end = prefix_end(prefix)
        if end is not None:
            where.append(sql.SQL("key < %s"))
            params.append(end)
        if after is not None:
            where.append(sql.SQL("key < %s" if reverse else "key > %s"))
            params.append(after)
        query = sql.SQL("SELECT key, value FROM {} WHERE {} ORDER BY key {}").format(
            TABLES[db], sql.SQL(" AND ").join(where), sql.SQL("DESC" if reverse else "ASC")
        )
        if limit is not None:
            query += sql.SQL(" LIMIT %s")
            params.append(limit)
        rows = await self.pool.run(partial(_fetch, query, tuple(params)))
        return [(key, value) for key, value in rows]

    async def heads(
        self, width: int, *, after: bytes | None = None, limit: int, db: str = "records"
    ) -> list[bytes]:
        """The distinct first ``width`` bytes of keys, in key order, past ``after``: one index
        seek per head, in one snapshot (the project ids of ``records``)."""
        return await self.pool.run(partial(_heads, TABLES[db], width, after, limit))

    def commit(self, op_lists: Sequence[Sequence[Op]]) -> None:
        """The writer's engine method: every op of the group in one transaction, fenced (see
        the module's docstring). Runs in the writer's thread, one call at a time."""
        final: dict[tuple[str, bytes], bytes | None] = {}
        asserted: dict[str, set[int]] = {}
        expected: dict[tuple[str, bytes], tuple[bytes | None, int]] = {}
        for index, ops in enumerate(op_lists):
            check_claims(ops)
            for db, key, value in ops:
                if db == LEASE:
                    asserted.setdefault(key.decode("ascii"), set()).add(int(value or b"0"))
                    continue
                if db == EXPECT:
                    _expect(expected_place(key), value, index, final, expected)
                    continue
                if db not in TABLES:
                    raise KeyError(f"no database {db!r}")
                if not 0 < len(key) <= MAX_KEY:
                    raise ValueError(f"a key is 1 to {MAX_KEY} bytes, not {len(key)}")
                final[db, key] = value
        puts: dict[str, list[tuple[bytes, bytes]]] = {}
        gone: dict[str, list[bytes]] = {}
        # in key order: two writers' transactions lock rows in one order, never in a cycle
        for (db, key), value in sorted(final.items()):
            if value is None:
                gone.setdefault(db, []).append(key)
            else:
                puts.setdefault(db, []).append((key, value))
        try:
            conn = self._writer_connection()
        except StoreUnavailable as exc:
            self.outage.failed(exc.__cause__ or exc)
            raise
        try:
            with conn.transaction(), conn.cursor() as cursor:
                _check_expected(cursor, expected)
                self._check_fence(cursor, final, asserted)
                for db, rows in puts.items():
                    written = ([key for key, _ in rows], [value for _, value in rows])
                    cursor.execute(_UPSERT[db], written, prepare=True)
                for db, keys_ in gone.items():
                    cursor.execute(_DELETE[db], (keys_,), prepare=True)
        except psycopg.OperationalError as exc:
            self.outage.failed(exc)
            raise _unavailable(exc) from exc
        self.outage.ok()

    def _check_fence(
        self,
        cursor: psycopg.Cursor[Any],
        final: dict[tuple[str, bytes], bytes | None],
        asserted: dict[str, set[int]],
    ) -> None:
        if self.fence is None:
            return
        written = {project_of(key) for db, key in final if db == "records"}
        projects = sorted(written | set(asserted))
        if not projects:
            return
        cursor.execute(_FENCE, (projects, self.fence.node_id))
        held = dict(cursor.fetchall())
        fence = self.fence

        def current(project: str) -> bool:
            made_under: set[int | None] = {*asserted.get(project, ())} or {fence.epoch(project)}
            # two epochs of one project in one group: the earlier actor's writes are stale
            return held.get(project) is not None and made_under == {held[project]}

        stale = [p for p in projects if not current(p)]
        if stale:
            raise StaleEpoch(stale, self.fence.node_id)

    def _writer_connection(self) -> psycopg.Connection[Any]:
        if self._writer is None or self._writer.broken or self._writer.closed:
            self._writer = _connect(self.url)
        return self._writer

    def close(self) -> None:
        self.pool.close()
        if self._writer is not None:
            self._writer.close()


@asynccontextmanager
async def open_postgres_store(
    url: str, *, fence: Fence | None = None, readers: int = 4
) -> AsyncIterator[PostgresStore]:
    """The store at ``url`` (a ``postgresql://`` URL), its tables made if missing, closed on
    exit. Close its writer (``open_writer``) before it."""
    store = PostgresStore(url, fence=fence, readers=readers)
    try:
        await store.create_schema()
        yield store
    finally:
        store.close()


def _connect(url: str) -> psycopg.Connection[Any]:
    try:
        return psycopg.connect(url, autocommit=True)
    except psycopg.OperationalError as exc:
        raise _unavailable(exc) from exc


def _unavailable(exc: psycopg.OperationalError) -> StoreUnavailable:
    """PostgreSQL out of reach, out of room or shutting down: the caller may retry. The
    answer's words are fixed: PostgreSQL's own (addresses, settings of the connection string)
    stay out of it; the outage goes to the log once (``outage``)."""
    failure = StoreUnavailable(
        "unavailable", "The store cannot be reached or cannot write now; retry later."
    )
    failure.told = True  # every caller of this reports to the store's ``Outage``
    failure.__cause__ = exc
    return failure


def create_schema(conn: psycopg.Connection[Any]) -> None:
    """The store's tables, made if missing; ``MissingGrant`` if the role may not make or use
    them."""
    there = conn.execute(
        "SELECT count(to_regclass(t)) FROM unnest(%s::text[]) AS t", (TABLE_NAMES,)
    ).fetchone()
    # made already (by another role, perhaps): CREATE ... IF NOT EXISTS would still need CREATE
    if there is None or there[0] < len(TABLE_NAMES):
        try:
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
                for statement in SCHEMA:
                    conn.execute(statement)
        except psycopg.errors.InsufficientPrivilege:
            raise grants.cannot_create(conn.info.user, conn.info.dbname) from None
    # one right at a time: given several, has_table_privilege asks for any of them
    refused = [
        table
        for (table,) in conn.execute(
            "SELECT t FROM unnest(%s::text[]) AS t, unnest(%s::text[]) AS r"
            " GROUP BY t HAVING NOT bool_and(has_table_privilege(t, r)) ORDER BY t",
            (TABLE_NAMES, list(grants.TABLE_RIGHTS)),
        ).fetchall()
    ]
    if refused:
        raise grants.cannot_use(conn.info.user, refused)


def _expect(
    place: tuple[str, bytes],
    raw: bytes | None,
    ticket: int,
    final: dict[tuple[str, bytes], bytes | None],
    expected: dict[tuple[str, bytes], tuple[bytes | None, int]],
) -> None:
    """Take one expectation of a group, in its order: against the group's own earlier write of
    the key when there is one, else against the stored value (checked in the transaction)."""
    if place[0] not in TABLES:
        raise KeyError(f"no database {place[0]!r}")
    if place in final:
        if final[place] != raw:
            raise Contended(place[0], ticket)
    elif expected.setdefault(place, (raw, ticket))[0] != raw:
        raise Contended(place[0], ticket)


def _check_expected(
    cursor: psycopg.Cursor[Any], expected: dict[tuple[str, bytes], tuple[bytes | None, int]]
) -> None:
    """Raise ``Contended`` unless every expected key holds its expected value, and keep it so
    until the commit. A transaction-scoped advisory lock per key serialises the transactions
    that expect the same key, absent ones included (``FOR UPDATE`` locks only a row that is
    there); taken in one order, before any row lock, so two commits that assert keys never wait
    on each other in a cycle. After the lock, the read sees every commit made before it (READ
    COMMITTED)."""
    if not expected:
        return
    locks = sorted({_lock_id(db, key) for db, key in expected})
    cursor.execute(_LOCK_KEYS, (locks,), prepare=True)  # in the array's order: no sort node
    wanted: dict[str, list[bytes]] = {}
    for db, key in sorted(expected):
        wanted.setdefault(db, []).append(key)
    for db, keys_ in wanted.items():
        cursor.execute(_READ_LOCKED[db], (keys_,), prepare=True)
        found = {bytes(key): bytes(value) for key, value in cursor.fetchall()}
        for key in keys_:
            raw, ticket = expected[db, key]
            if found.get(key) != raw:
                raise Contended(db, ticket)


def _lock_id(db: str, key: bytes) -> int:
    digest = hashlib.blake2b(db.encode("ascii") + b"\x00" + key, digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def _fetch(
    query: sql.Composed, params: tuple[Any, ...], conn: psycopg.Connection[Any]
) -> list[tuple[Any, ...]]:
    return conn.execute(query, params, prepare=True).fetchall()


def _heads(
    table: sql.Identifier,
    width: int,
    after: bytes | None,
    limit: int,
    conn: psycopg.Connection[Any],
) -> list[bytes]:
    seek = sql.SQL("SELECT key FROM {} WHERE key >= %s ORDER BY key LIMIT 1").format(table)
    out: list[bytes] = []
    start = prefix_end(after) if after is not None else b""
    with conn.transaction():
        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        while start is not None and len(out) < limit:
            row = conn.execute(seek, (start,), prepare=True).fetchone()
            if row is None:
                break
            head = bytes(row[0][:width])
            out.append(head)
            start = prefix_end(head)
    return out
