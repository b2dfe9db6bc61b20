"""Which node serves which project (cluster mode, issue 28): leases and node heartbeats, in the
PostgreSQL store's tables ``nodes(node_id, address, heartbeat_at)`` and
``leases(project_id, owner, epoch, expires_at)`` (made with its schema, ``store.SCHEMA``).

Every instant is PostgreSQL's own (``clock_timestamp()``), in the statement that decides: when a
lease ends, whether it has ended, when a node last beat. The nodes' clocks never enter a
decision, so a node whose clock is off can neither keep a lease past its end nor take one early.

A project is served by one node at a time, the holder of its lease:

- ``acquire``: a free, released or expired lease (or one already this node's) is taken with
  its epoch + 1 (1 for a project never leased); a live lease of another node is refused with
  ``LeaseHeld``, naming the holder and until when.
- ``renew`` moves the end of a live lease this node holds at its epoch; ``heartbeat`` records
  the node and renews every lease it holds in one transaction, and says which it lost.
- ``release`` ends a lease now (draining a node releases them all); the epoch is kept, so the
  next holder's is higher.
- ``move`` hands a project to a named live node: the lease becomes that node's at epoch + 1 at
  once (fencing out the old holder), and that node's next ``acquire`` takes it up.

A ``Leases`` object is one node's side: the epoch of each lease it holds, which its store's
commits check (it is the store's ``store.Fence``). A commit of a project whose lease is
expired, moved or taken over fails with ``store.StaleEpoch`` and writes nothing.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from edge.domain.clock_offset import offset_after
from edge.domain.ids import wall_clock_ms

if TYPE_CHECKING:  # psycopg is the cluster extra's: a node on LMDB never loads it
    import psycopg

    from edge.store.postgres.store import ConnectionPool

Clock = Callable[[], int]  # milliseconds


def _monotonic_ms() -> int:
    return time.monotonic_ns() // 1_000_000


LEASE_S = 10.0  # how long a lease lasts unrenewed: a node should beat well within it
NODE_S = 10.0  # a node that has not beaten for this long is not alive
# a node gone this long is forgotten (``edge cluster nodes`` stops listing it): a container's
# node that starts with a fresh data dir has a new id each time, and the table would grow
# with every restart (``forget_gone``, which each live node's ownership runs now and then)
NODE_KEPT_S = 7 * 24 * 3600.0

_ROW = "project_id, owner, epoch, expires_at, expires_at > clock_timestamp()"


@dataclass(frozen=True)
class Lease:
    project_id: str
    owner: str
    epoch: int
    expires_at: datetime  # PostgreSQL's clock
    live: bool


@dataclass(frozen=True)
class Node:
    node_id: str
    address: str
    heartbeat_at: datetime  # PostgreSQL's clock
    alive: bool


class LeaseHeld(Exception):
    """Another node holds the project's live lease."""

    def __init__(self, project_id: str, owner: str, expires_at: datetime) -> None:
        self.project_id, self.owner, self.expires_at = project_id, owner, expires_at
        super().__init__(
            f"project {project_id} is leased to node {owner} until {expires_at.isoformat()}"
        )


class LeaseLost(Exception):
    """This node no longer holds the lease it tried to renew (expired, moved, taken over)."""


class UnknownNode(Exception):
    """A project cannot move to a node that is not registered and alive."""


class Leases:
    """One node's leases. ``pool`` is the store's (``PostgresStore.pool``) or one of its own."""

    def __init__(
        self,
        pool: ConnectionPool,
        node_id: str,
        address: str,
        *,
        lease_s: float = LEASE_S,
        node_s: float = NODE_S,
        wall_ms: Clock = wall_clock_ms,
        local_ms: Clock = _monotonic_ms,
    ) -> None:
        self.pool = pool
        self.node_id = node_id
        self.address = address
        self.lease_s = lease_s
        self.node_s = node_s
        self._held: dict[str, int] = {}
        # the other nodes that beat within a lease, as of this node's last heartbeat
        self.others: frozenset[str] = frozenset()
        # PostgreSQL's clock less this node's monotonic one (``local_ms``), read with each
        # heartbeat (edge.domain.clock_offset): ``clock_ms``, the time the nodes stamp what
        # they share by; None before the first reading
        self._offset: int | None = None
        self._wall_ms = wall_ms
        self._local_ms = local_ms

    def clock_ms(self) -> int:
        """PostgreSQL's time now: its clock as the last heartbeat read it, carried on by this
        node's monotonic clock (a step of the machine's wall clock between beats moves
        nothing); the machine's wall clock until the first reading."""
        offset = self._offset
        if offset is None:
            return self._wall_ms()
        return self._local_ms() + offset

    def epoch(self, project_id: str) -> int | None:
        return self._held.get(project_id)

    def held(self) -> dict[str, int]:
        return dict(self._held)

    async def acquire(self, project_id: str) -> Lease:
        """Take the project's lease at a new epoch, or raise ``LeaseHeld``. Taking up a lease
        this node already holds moves its epoch too (an earlier incarnation of the node, paused
        with the old epoch, is fenced out); a commit of the project in flight meanwhile fails
        with ``StaleEpoch``, retryable."""
        lease = await self.pool.run(lambda conn: self._acquire(conn, project_id))
        self._held[project_id] = lease.epoch
        return lease

    def _acquire(self, conn: psycopg.Connection[Any], project_id: str) -> Lease:
        with conn.transaction():
            row = conn.execute(
                "INSERT INTO leases AS l (project_id, owner, epoch, expires_at)"
                " VALUES (%s, %s, 1, clock_timestamp() + make_interval(secs => %s))"
                " ON CONFLICT (project_id) DO UPDATE SET owner = EXCLUDED.owner,"
                " epoch = l.epoch + 1, expires_at = EXCLUDED.expires_at"
                " WHERE l.expires_at <= clock_timestamp() OR l.owner = EXCLUDED.owner"
                f" RETURNING {_ROW}",
                (project_id, self.node_id, self.lease_s),
            ).fetchone()
            if row is not None:
                return Lease(*row)
            holder = _lease(conn, project_id)
        assert holder is not None  # the row the insert ran into
        raise LeaseHeld(project_id, holder.owner, holder.expires_at)

    async def renew(self, project_id: str) -> Lease:
        """Move the end of a live lease this node holds; ``LeaseLost`` if it holds it no more."""
        epoch = self._held.get(project_id)
        renewed = await self.pool.run(lambda conn: self._renew(conn, {project_id: epoch or 0}))
        if not renewed:
            self._held.pop(project_id, None)
            raise LeaseLost(f"node {self.node_id} no longer holds the lease of {project_id}")
        return renewed[0]

    def _renew(self, conn: psycopg.Connection[Any], held: dict[str, int]) -> list[Lease]:
        rows = conn.execute(
            "UPDATE leases AS l SET expires_at = clock_timestamp() + make_interval(secs => %s)"
            " FROM unnest(%s::text[], %s::bigint[]) AS h(project_id, epoch)"
            " WHERE l.project_id = h.project_id AND l.epoch = h.epoch AND l.owner = %s"
            " AND l.expires_at > clock_timestamp()"
            " RETURNING l.project_id, l.owner, l.epoch, l.expires_at, true",
            (self.lease_s, list(held), list(held.values()), self.node_id),
        ).fetchall()
        return [Lease(*row) for row in rows]

    async def heartbeat(self) -> list[str]:
        """Record that this node is alive (at its address) and renew every lease it holds, in
        one statement (an idle node's only round trip: BEGIN and COMMIT around two statements
        would triple it); the projects whose leases it lost (dropped from its own). The same
        statement reads which other nodes beat within a lease (``others``): one that stops
        beating has had its leases lapse, and its owed work is for the nodes left to take;
        and PostgreSQL's clock (``clock_ms``)."""
        held = dict(self._held)
        local_ms = self._local_ms

        def beat(conn: psycopg.Connection[Any]) -> tuple[list[tuple[Any, ...]], int, int]:
            # a data-modifying WITH runs whether or not the UPDATE finds rows; the SELECT of
            # the other nodes reads the table as it was before this node's own row was written,
            # and counts from the statement's start: a wait for a lease row's lock (a commit
            # in flight) makes no live node look gone
            sent_ms = local_ms()
            rows = conn.execute(
                "WITH alive AS (INSERT INTO nodes (node_id, address, heartbeat_at)"
                " VALUES (%s, %s, clock_timestamp()) ON CONFLICT (node_id) DO UPDATE"
                " SET address = EXCLUDED.address, heartbeat_at = EXCLUDED.heartbeat_at),"
                " renewed AS (UPDATE leases AS l"
                " SET expires_at = clock_timestamp() + make_interval(secs => %s)"
                " FROM unnest(%s::text[], %s::bigint[]) AS h(project_id, epoch)"
                " WHERE l.project_id = h.project_id AND l.epoch = h.epoch AND l.owner = %s"
                " AND l.expires_at > clock_timestamp()"
                " RETURNING l.project_id, l.owner, l.epoch, l.expires_at)"
                " SELECT project_id, owner, epoch, expires_at, true FROM renewed UNION ALL"
                " SELECT node_id, node_id, 0, heartbeat_at, false FROM nodes"
                " WHERE node_id <> %s"
                " AND heartbeat_at > statement_timestamp() - make_interval(secs => %s)"
                " UNION ALL SELECT '', '', 0, clock_timestamp(), NULL",
                (
                    self.node_id,
                    self.address,
                    self.lease_s,
                    list(held),
                    list(held.values()),
                    self.node_id,
                    self.node_id,
                    self.lease_s,
                ),
            ).fetchall()
            return rows, sent_ms, local_ms()

        rows, sent_ms, got_ms = await self.pool.run(beat)
        renewed = {row[0] for row in rows if row[4]}
        self.others = frozenset(row[0] for row in rows if row[4] is False)
        for row in rows:
            if row[4] is None:  # the clock's row
                store_ms = round(row[3].timestamp() * 1000)
                self._offset = offset_after(self._offset, store_ms, sent_ms, got_ms)
        # a lease acquired anew while the beat ran (a paused node's request at its wake) is
        # not lost: the actor made under its new epoch stays (dropping it mid-work would let
        # a second actor of that same epoch be made, which no fence tells apart)
        lost = [p for p in sorted(set(held) - renewed) if self._held.get(p) == held[p]]
        for project_id in lost:
            del self._held[project_id]
        return lost

    async def forget_gone(self) -> int:
        """Forget the nodes that have not beaten for ``NODE_KEPT_S`` (never this one); how many.
        A statement of its own, which waits for no row: a gone node that starts again beats
        its own row, and two such nodes each deleting the other's row while writing their own
        in one statement would wait on each other."""
        return await self.pool.run(
            lambda conn: (
                conn.execute(
                    "DELETE FROM nodes WHERE node_id IN (SELECT node_id FROM nodes"
                    " WHERE node_id <> %s"
                    " AND heartbeat_at < clock_timestamp() - make_interval(secs => %s)"
                    " FOR UPDATE SKIP LOCKED)",
                    (self.node_id, NODE_KEPT_S),
                ).rowcount
            )
        )

    async def release(self, project_id: str) -> None:
        """End this node's lease of the project now (if it still holds it)."""
        await self.release_all([project_id])

    async def release_all(self, project_ids: Sequence[str] | None = None) -> None:
        """End this node's leases (all of them: a drain) now; nothing else changes hands."""
        held = {p: e for p, e in self._held.items() if project_ids is None or p in project_ids}
        for project_id in held:
            del self._held[project_id]
        await self.pool.run(
            lambda conn: conn.execute(
                "UPDATE leases AS l SET expires_at = clock_timestamp()"
                " FROM unnest(%s::text[], %s::bigint[]) AS h(project_id, epoch)"
                " WHERE l.project_id = h.project_id AND l.epoch = h.epoch AND l.owner = %s"
                " AND l.expires_at > clock_timestamp()",
                (list(held), list(held.values()), self.node_id),
            )
        )

    async def move(self, project_id: str, node_id: str) -> Lease:
        """Hand the project to the live node ``node_id``: its lease at epoch + 1 from now on
        (whoever held it, this node or another, can no longer commit it)."""

        def move(conn: psycopg.Connection[Any]) -> Lease:
            with conn.transaction():
                alive = conn.execute(
                    "SELECT heartbeat_at > clock_timestamp() - make_interval(secs => %s)"
                    " FROM nodes WHERE node_id = %s",
                    (self.node_s, node_id),
                ).fetchone()
                if alive is None or not alive[0]:
                    raise UnknownNode(f"no live node {node_id} to move {project_id} to")
                row = conn.execute(
                    "INSERT INTO leases AS l (project_id, owner, epoch, expires_at)"
                    " VALUES (%s, %s, 1, clock_timestamp() + make_interval(secs => %s))"
                    " ON CONFLICT (project_id) DO UPDATE SET owner = EXCLUDED.owner,"
                    " epoch = l.epoch + 1, expires_at = EXCLUDED.expires_at"
                    f" RETURNING {_ROW}",
                    (project_id, node_id, self.lease_s),
                ).fetchone()
            assert row is not None  # an upsert always returns its row
            return Lease(*row)

        lease = await self.pool.run(move)
        if node_id != self.node_id:
            self._held.pop(project_id, None)
        else:
            self._held[project_id] = lease.epoch
        return lease

    async def lease(self, project_id: str) -> Lease | None:
        return await self.pool.run(lambda conn: _lease(conn, project_id))

    async def leases(self) -> list[Lease]:
        """Every project's lease, live or not, by project id."""
        rows = await self.pool.run(
            lambda conn: conn.execute(f"SELECT {_ROW} FROM leases ORDER BY project_id").fetchall()
        )
        return [Lease(*row) for row in rows]

    async def nodes(self) -> list[Node]:
        """Every node that beat, by id, alive if it beat within ``node_s`` (a live node forgets
        the ones gone for ``NODE_KEPT_S``: ``forget_gone``)."""
        rows = await self.pool.run(
            lambda conn: conn.execute(
                "SELECT node_id, address, heartbeat_at,"
                " heartbeat_at > clock_timestamp() - make_interval(secs => %s)"
                " FROM nodes ORDER BY node_id",
                (self.node_s,),
            ).fetchall()
        )
        return [Node(*row) for row in rows]


def _lease(conn: psycopg.Connection[Any], project_id: str) -> Lease | None:
    row = conn.execute(f"SELECT {_ROW} FROM leases WHERE project_id = %s", (project_id,)).fetchone()
    return None if row is None else Lease(*row)


async def drain_node(pool: ConnectionPool, node_id: str) -> list[str]:
    """The operator's drain (``edge cluster drain``): end every live lease of ``node_id`` now,
    whatever that node believes it holds; its commits of those projects fail from this instant
    (fencing), and the next node a project's request reaches takes it up. The projects
    released, by id."""
    rows = await pool.run(
        lambda conn: conn.execute(
            "UPDATE leases SET expires_at = clock_timestamp()"
            " WHERE owner = %s AND expires_at > clock_timestamp() RETURNING project_id",
            (node_id,),
        ).fetchall()
    )
    return sorted(row[0] for row in rows)
