"""A copy of the whole store into an empty store of the other engine (``edge cluster
copy-store``): from a data dir's LMDB store into PostgreSQL to start a cluster, and back.

Every database of ``engine.DATABASES`` is copied, keys and values byte for byte: both engines
keep the databases, keys and values of the store interface (``edge.store.engine``), so a node
reads the copy as it read the original. The leases and heartbeats of a PostgreSQL store are not
copied: they belong to the nodes that ran on it, and nodes start over with new leases.

The copy reads one consistent snapshot of the source and writes the target in batches of at most
``BATCH_KEYS`` keys or ``BATCH_BYTES`` bytes, so neither side is ever held in memory whole:

- an LMDB source is read in one read transaction, under its data dir's lock, so its node must be
  stopped (what it wrote after the snapshot would be lost) and none starts meanwhile;
- a PostgreSQL source is read in one ``REPEATABLE READ`` snapshot, and is refused while a node
  beats its heartbeat or holds a live lease on it, for the same reason
  (``edge.store.postgres.copy``);
- an LMDB target is built beside the data dir's store (``store.copying``), under the data dir's
  lock, and takes its place once whole: a failed copy leaves no store behind;
- a PostgreSQL target is written in one transaction that holds its store's tables against
  writes: a failed copy leaves it empty, and a node that starts on it meanwhile waits for the
  copy and then reads it whole.

A target that holds any key is refused: a copy never merges two stores.

Each engine reads and writes the interface's neutral stream (``engine.Source``,
``engine.Target``); this module alone knows both engines, so neither imports the other.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, ExitStack
from pathlib import Path

from edge.store.engine import DATABASES, CopyRefused, Source, Target
from edge.store.lmdb.copy import lmdb_source, lmdb_target


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


def _same(source: str, target: str) -> bool:
    if is_postgres(source) or is_postgres(target):
        return source == target
    return Path(source).resolve() == Path(target).resolve()


def _source(where: str) -> AbstractContextManager[Source]:
    if is_postgres(where):  # psycopg: the cluster extra, loaded only for a PostgreSQL store
        from edge.store.postgres.copy import postgres_source

        return postgres_source(where)
    return lmdb_source(Path(where))


def _target(where: str) -> AbstractContextManager[Target]:
    if is_postgres(where):
        from edge.store.postgres.copy import postgres_target

        return postgres_target(where)
    return lmdb_target(Path(where))
