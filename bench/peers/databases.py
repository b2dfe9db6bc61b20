"""The peers' databases: a throwaway PostgreSQL server, the SQLite file, their two tables, the
bench's orders in them, and the count of stored events that every run is checked with.

The tables are what the merchant's migration would make: ``events`` (a Stripe event stored once
under its id, the raw payload kept) and ``orders`` (the checkouts the shop made, keyed by the
transaction id the Checkout Session carries as ``client_reference_id``). The orders are the
node's own transactions for the bench's shop, with the same ids, amount and currency, so the
same signed deliveries pay an order at the node and at every peer.
"""

from __future__ import annotations

import os
import pwd
import shutil
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

from bench.cluster import Postgres, children, cpu_seconds
from bench.servers import SERVER_CPU

POSTGRES_SCHEMA = """
CREATE TABLE events (
    id text PRIMARY KEY,
    project text NOT NULL,
    type text NOT NULL,
    payload jsonb NOT NULL,
    received_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE orders (
    id text PRIMARY KEY,
    project text NOT NULL,
    amount_total bigint NOT NULL,
    currency text NOT NULL,
    status text NOT NULL DEFAULT 'pending',
    updated_at timestamptz NOT NULL DEFAULT now()
);
"""

SQLITE_SCHEMA = """
CREATE TABLE events (
    id TEXT PRIMARY KEY,
    project TEXT NOT NULL,
    type TEXT NOT NULL,
    payload TEXT NOT NULL,
    received_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP
);
CREATE TABLE orders (
    id TEXT PRIMARY KEY,
    project TEXT NOT NULL,
    amount_total INTEGER NOT NULL,
    currency TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'pending',
    updated_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP
);
"""

# (tx id, project, amount in minor units, lower-case currency), as Stripe states them
Order = tuple[str, str, int, str]


class PeersPostgres(Postgres):
    """``bench.cluster``'s throwaway server (Debian's binaries, a unix socket, ``fsync`` on, as
    the ``postgres`` user when root), started pinned to the servers' CPU: the database shares
    its core with the app, as on a one-core host. Without ``pg_stat_statements``: nothing but
    what a merchant's server runs. A database of its own for each peer."""

    def start(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:
            user = pwd.getpwnam("postgres")
            os.chown(self.root, user.pw_uid, user.pw_gid)
            self._as = ["runuser", "-u", "postgres", "--"]
        self._run("mkdir", str(self.socket_dir))
        self._run(
            str(self.binaries / "initdb"),
            *("-D", str(self.data), "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync"),
        )
        pin = ["taskset", "-c", str(SERVER_CPU)] if (os.cpu_count() or 1) > 1 else []
        options = f"-k {self.socket_dir} -c listen_addresses='' -c fsync=on"
        self._run(
            *pin,
            str(self.binaries / "pg_ctl"),
            *("-D", str(self.data), "-l", str(self.root / "log"), "-o", options, "-w", "start"),
        )

    def create(self, database: str, orders: Sequence[Order]) -> str:
        """A new database with the tables and ``orders``; its URL."""
        self.sql("postgres", f"CREATE DATABASE {database}")
        import psycopg

        with psycopg.connect(self.url(database)) as conn:
            conn.execute(POSTGRES_SCHEMA)  # type: ignore[arg-type]
            with conn.cursor() as cursor:
                cursor.executemany(
                    "INSERT INTO orders (id, project, amount_total, currency)"
                    " VALUES (%s, %s, %s, %s)",
                    orders,
                )
        return self.url(database)

    def count(self, database: str, table: str, where: str = "") -> int:
        return int(self.sql(database, f"SELECT count(*) FROM {table} {where}")[0][0])

    def cpu_by_pid(self) -> dict[int, float]:
        """CPU seconds so far of the postmaster and each of its processes (a backend for each
        of the peers' connections, and the checkpointer, WAL writer...)."""
        postmaster = int((self.data / "postmaster.pid").read_text().split()[0])
        return {pid: cpu_seconds([pid]) for pid in (postmaster, *children(postmaster))}


@contextmanager
def running_postgres(root: Path) -> Iterator[PeersPostgres]:
    server = PeersPostgres(root)
    try:
        server.start()
        yield server
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)


def create_sqlite(path: Path, orders: Sequence[Order]) -> Path:
    """The SQLite file: WAL (a setting the file keeps), the tables and ``orders``."""
    with closing(sqlite3.connect(path)) as conn:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.executescript(SQLITE_SCHEMA)
        with conn:
            conn.executemany(
                "INSERT INTO orders (id, project, amount_total, currency) VALUES (?, ?, ?, ?)",
                orders,
            )
    return path


def count_sqlite(path: Path, table: str, where: str = "") -> int:
    with closing(sqlite3.connect(path)) as conn:
        row: Any = conn.execute(f"SELECT count(*) FROM {table} {where}").fetchone()
        return int(row[0])


def count_node_events(data_dir: Path, project_id: str) -> int:
    """Events the node has stored for the project: its LMDB store's event records, read from
    here (LMDB lets another process read while the node writes)."""
    from edge.store import keys
    from edge.store.lmdb.store import STORE_DIR, open_environment

    prefix = keys.prefix(project_id, keys.EVENT)
    env = open_environment(data_dir / STORE_DIR, 64 * 2**30, readonly=True)
    try:
        with env.begin(db=env.open_db(b"records", create=False)) as txn:
            cursor = txn.cursor()
            found = 0
            if cursor.set_range(prefix):
                for key in cursor.iternext(keys=True, values=False):
                    if not key.startswith(prefix):
                        break
                    found += 1
            return found
    finally:
        env.close()
