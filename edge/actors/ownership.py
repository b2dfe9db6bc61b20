"""Which projects this node serves, in cluster mode (docs/cluster.md): a project's actor is made
only under its lease (``edge.store.leases``), the leases are renewed by a heartbeat, and the
actors of the projects lost are dropped.

- ``take`` acquires the lease as the registry makes the actor: its epoch goes into the actor's
  every write (``env.lease_op``), so the store refuses them once another node has the project.
  A lease another node holds is a retryable ``503 unavailable`` naming the holder: HAProxy's
  map sends the next try there (or the lease ends and this node takes it up).
- ``held`` is the registry's check before every message, for the epoch the actor was made
  under: a lease counts as this node's only until the end it had when last renewed, by this
  node's monotonic clock, counted from before the renewal was asked (never later than
  PostgreSQL's own end). A node paused past it (SIGSTOP, a long GC, a partition) answers
  nothing from the actor's memory once it wakes: the registry drops the actor and takes the
  lease anew, or answers 503. An actor of an epoch taken anew since (a queue worker's
  ``claim``) is dropped too, so the next message is served under the new epoch.
- ``run`` beats every ``lease_s / 3``: gives back the leases of projects that have been
  quiet here for a lease's length (no request, nothing pending), dropping their actors, so a
  project HAProxy now sends elsewhere (a node back from a restart, a pin) is taken up there
  within about a lease, not after the actor's idle time; renews the others, records the node
  alive, and drops the actors of the projects it lost.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable

import trio

from edge.errors import Unavailable
from edge.store.leases import LeaseHeld, Leases

log = logging.getLogger("edge.cluster")

OTHERS_S = 1.0  # a queue worker's next look while due entries are other nodes' to attempt


async def all_mine(project_id: str) -> bool:
    """One node (no leases): every queued entry is this node's to attempt."""
    return True


class Ownership:
    def __init__(self, leases: Leases, clock: Callable[[], float] = trio.current_time) -> None:
        self.leases = leases
        self._clock = clock
        self._until: dict[str, float] = {}  # project id -> end of its lease, by our clock
        # project id -> until when its work is taken to be another node's (``claim``)
        self._elsewhere: dict[str, float] = {}
        self.lost = 0  # leases lost (taken over, moved, drained, expired unrenewed)

    async def take(self, project_id: str) -> int:
        """This node's lease of the project (its epoch), or a retryable 503."""
        epoch = self.leases.epoch(project_id)
        if epoch is not None and self.held(project_id):
            return epoch
        asked = self._clock()
        try:
            lease = await self.leases.acquire(project_id)
        except LeaseHeld as held:
            raise Unavailable(
                "unavailable",
                f"This project is served by node {held.owner} now; retry.",
                retryable=True,
            ) from None
        self._until[project_id] = asked + self.leases.lease_s
        return lease.epoch

    async def claim(self, project_id: str) -> bool:
        """Is the project's queued work this node's? Yes while it holds the lease; a lease no
        node holds is taken (work owed for a project no request has reached lately). A project
        found another node's is not asked about again for a third of a lease: a queue's pass
        over that node's entries costs no round trip each."""
        if self._clock() < self._elsewhere.get(project_id, -math.inf):
            return False
        try:
            await self.take(project_id)
        except Unavailable:
            self._elsewhere[project_id] = self._clock() + self.leases.lease_s / 3
            return False
        self._elsewhere.pop(project_id, None)
        return True

    async def give_back(self, project_id: str) -> None:
        """End this node's lease of the project now (it needs it no more)."""
        self._until.pop(project_id, None)
        await self.leases.release(project_id)

    def held(self, project_id: str, epoch: int | None = None) -> bool:
        """The lease is this node's, for sure, right now (``epoch``: and at that epoch, the one
        an actor was made under: a lease taken anew meanwhile, by a queue worker's ``claim``,
        is another actor's)."""
        until = self._until.get(project_id)
        if until is None or self._clock() >= until:
            return False
        return epoch is None or self.leases.epoch(project_id) == epoch

    async def beat(self) -> list[str]:
        """Renew every lease held; the projects lost (dropped here)."""
        asked = self._clock()
        self._elsewhere = {p: t for p, t in self._elsewhere.items() if t > asked}
        lost = await self.leases.heartbeat()
        for project_id in lost:
            self._until.pop(project_id, None)
        for project_id in self.leases.held():
            self._until[project_id] = asked + self.leases.lease_s
        self.lost += len(lost)
        return lost

    async def run(
        self,
        forget: Callable[[str], None],
        quiet: Callable[[str, float], bool],
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Beat until cancelled. ``quiet(project_id, for_s)``: nothing of the project here has
        moved for ``for_s`` (its lease is given back); ``forget(project_id)`` drops its actor."""
        await self.leases.heartbeat()  # the node is listed alive from its start
        task_status.started()
        while True:
            await trio.sleep(self.leases.lease_s / 3)
            try:
                idle = [p for p in self.leases.held() if quiet(p, self.leases.lease_s)]
                if idle:
                    for project_id in idle:
                        self._until.pop(project_id, None)
                        forget(project_id)
                    await self.leases.release_all(idle)
                lost = await self.beat()
            except Unavailable:
                # PostgreSQL out of reach: the leases run out by our own clock (``held``)
                log.warning("cluster: heartbeat failed; leases lapse unless renewed in time")
                continue
            for project_id in lost:
                log.info("cluster: lost the lease of %s; its actor is dropped", project_id)
                forget(project_id)

    async def release_all(self) -> None:
        """On a clean stop: every lease ends now, so the next node takes the projects at once."""
        self._until.clear()
        await self.leases.release_all()
