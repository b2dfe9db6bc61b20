"""The PostgreSQL side of ``edge.store.copy``: a store read in one snapshot, a store written in
one transaction, each the interface's neutral stream of batches. Its own connections (psycopg's
sync API, in the command's one thread): the copy is a command, not a node."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg import sql

from edge.store.engine import Batch, CopyRefused, Source, Target, batches
from edge.store.postgres.leases import NODE_S
from edge.store.postgres.store import TABLES, create_schema

_INSERT = {
    db: sql.SQL(
        "INSERT INTO {} (key, value) SELECT * FROM unnest(%s::bytea[], %s::bytea[])"
    ).format(table)
    for db, table in TABLES.items()
}


@contextmanager
def postgres_source(url: str) -> Iterator[Source]:
    """The store at ``url`` as one ``REPEATABLE READ`` snapshot, refused while a node of the
    cluster beats its heartbeat (what it wrote after the snapshot would not be in the copy)."""
    with psycopg.connect(url, autocommit=True) as conn, conn.transaction():
        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        if _one(conn, "SELECT to_regclass('store_records') IS NULL"):
            raise CopyRefused("the source database holds no edge store (no store_records table)")
        # a node that beat lately, or holds a live lease (its beats may be further apart than
        # NODE_S with a long EDGE_LEASE_S; a killed node's leases run to their end)
        running = conn.execute(
            "SELECT node_id FROM nodes"
            " WHERE heartbeat_at > clock_timestamp() - make_interval(secs => %s)"
            " UNION SELECT owner FROM leases WHERE expires_at > clock_timestamp()"
            " ORDER BY 1",
            (NODE_S,),
        ).fetchall()
        if running:
            names = ", ".join(row[0] for row in running)
            raise CopyRefused(
                f"nodes run on the source store ({names}: a heartbeat in the last {NODE_S:g} s "
                "or a live lease): stop every node of the cluster first (what they write after "
                "the copy's snapshot would be lost), then copy again"
            )

        def read(db: str) -> Iterator[Batch]:
            # a server-side cursor: the rows come a few at a time, never the table at once
            with conn.cursor(name=f"copy_{db}") as cursor:
                cursor.execute(sql.SQL("SELECT key, value FROM {} ORDER BY key").format(TABLES[db]))
                yield from batches((bytes(key), bytes(value)) for key, value in cursor)

        yield read


@contextmanager
def postgres_target(url: str) -> Iterator[Target]:
    """The empty store at ``url`` (its tables made if missing), written in one transaction
    that holds the store's tables against every write until it commits: a node that starts
    meanwhile waits for the copy, then finds it whole."""
    with psycopg.connect(url, autocommit=True) as conn:
        create_schema(conn)
        with conn.transaction():
            conn.execute(
                sql.SQL("LOCK TABLE {} IN EXCLUSIVE MODE").format(
                    sql.SQL(", ").join(TABLES.values())
                )
            )
            held = [
                db
                for db, table in TABLES.items()
                if _one(conn, sql.SQL("SELECT EXISTS (SELECT FROM {})").format(table))
            ]
            if held:
                raise CopyRefused(
                    f"the target store is not empty (keys in {', '.join(held)}): copy into a "
                    "new, empty database (createdb), on which no node has started"
                )

            def write(db: str, batch: Batch) -> None:
                conn.execute(
                    _INSERT[db], ([key for key, _ in batch], [value for _, value in batch])
                )

            yield write


def _one(conn: psycopg.Connection[Any], query: str | sql.Composed) -> Any:
    row = conn.execute(query).fetchone()
    assert row is not None  # a SELECT of one value
    return row[0]
