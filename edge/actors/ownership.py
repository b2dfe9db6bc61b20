"""Which projects this node serves: the node's ownership strategy, one of two.

- ``OneNode`` (LMDB, one node): every project is this node's, at one epoch, for ever. Nothing
  is taken, renewed or handed over, and no write carries a lease.
- ``Leased`` (cluster mode, N nodes on PostgreSQL; docs/cluster.md): a project's actor is made
  only under its lease (``edge.store.postgres.leases``), the leases are renewed by a
  heartbeat, and the actors of the projects lost are dropped.

The node, its registry, its queue workers and its actors ask the strategy the same questions in
both modes (``Ownership``); none of them asks which mode it is in. What follows is ``Leased``.

- ``take`` acquires the lease as the registry makes the actor: its epoch goes into the actor's
  every write (``fence``: ``edge.store.engine.lease_op``), so the store refuses them once
  another node has the project.
  A lease another node holds is a retryable ``503 unavailable`` naming the holder: HAProxy's
  map sends the next try there (or the lease ends and this node takes it up).
- ``held`` is the registry's check before every message, for the epoch the actor was made
  under: a lease counts as this node's only until the end it had when last renewed, by this
  node's monotonic clock, counted from before the renewal was asked (never later than
  PostgreSQL's own end). A node paused past it (SIGSTOP, a long GC, a partition) answers
  nothing from the actor's memory once it wakes: the registry drops the actor and takes the
  lease anew, or answers 503. An actor of an epoch taken anew since (a queue worker's
  ``claim``) is dropped too, so the next message is served under the new epoch.
- ``take(ask=True)`` (a request reached this node, so HAProxy sends the project here now) asks
  the holder of a live lease to hand it over, through ``edge.store.postgres.notices``;
  ``hand_over`` is the holder's side: it finishes the project's started work (``let_go``),
  ends the lease and says so. A holder that says nothing within ``ACK_S`` keeps its lease to
  its end (503).
- ``run`` beats every ``lease_s / 3``: gives back the leases of projects that have been
  quiet here for a lease's length (no request, nothing pending), dropping their actors, so a
  project HAProxy now sends elsewhere (a node back from a restart, a pin) is taken up there
  within about a lease, not after the actor's idle time; renews the others, records the node
  alive, and drops the actors of the projects it lost.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Protocol

import trio

from edge.domain.ids import wall_clock_ms
from edge.errors import Unavailable
from edge.store.engine import Op, lease_op
from edge.store.postgres.leases import Lease, LeaseHeld, Leases

if TYPE_CHECKING:
    from edge.store.postgres.notices import Notices

log = logging.getLogger("edge.cluster")

OTHERS_S = 1.0  # a queue worker's next look while due entries are other nodes' to attempt
# A hand-over: the holder says it is handing over within ACK_S (else it is taken for dead or
# paused, and not asked again for a third of a lease), lets the project's started work finish
# for up to GRACE_S, then frees the lease; the asker waits for that up to WAIT_S.
ACK_S = 0.5
GRACE_S = 1.0
WAIT_S = GRACE_S + 1.0
# A project handed away is not asked back for this long: a request that reached the old
# holder in the moment HAProxy switched is answered 503 (retryable: its retry goes to the new
# one), not a hand-over back and forth.
AWAY_S = 2.0
FORGET_EVERY_S = 3600.0  # how often a node forgets the nodes gone a week (``forget_gone``)


# What ``Ownership.run`` is given of the registry: ``forget(project_id)`` drops its actor;
# ``quiet(project_id, for_s)``: nothing of the project here has moved for ``for_s``;
# ``let_go(project_id, grace_s)`` lets its started work finish (up to ``grace_s``), then drops it.
Forget = Callable[[str], None]
Quiet = Callable[[str, float], bool]
LetGo = Callable[[str, float], Awaitable[None]]
# ``gone()``: another node stopped beating (its leases lapse within a lease of its last beat)
Gone = Callable[[], None]


class Ownership(Protocol):
    """The questions every part of the node asks about which projects are its own."""

    @property
    def shared(self) -> bool:
        """Other nodes share this node's store (its signing key and API key index must agree
        with theirs)."""

    def clock_ms(self) -> int:
        """The time every node sharing the store stamps and compares by (an entry's hold, a
        recorded call), in milliseconds: the store's clock in cluster mode, whatever this
        machine's says; the wall clock on one node."""

    async def take(self, project_id: str, *, ask: bool = False) -> int:
        """The epoch this node serves the project under, taken now if need be; a retryable
        503 when another node serves it. ``ask``: a request for it reached this node, whose
        holder is asked to hand it over."""

    async def give_back(self, project_id: str) -> None:
        """This node needs the project no more (a project created, an unknown id)."""

    def held(self, project_id: str, epoch: int | None = None) -> bool:
        """The project is this node's right now (``epoch``: at that epoch)."""

    async def claim(self, project_id: str) -> bool:
        """The project's queued work (follow-ups, notifications) is this node's to attempt."""

    def fence(self, project_id: str, epoch: int) -> list[Op]:
        """What every write made under ``epoch`` carries, so the store refuses it once the
        project is another node's."""

    async def run(
        self,
        address: str,
        forget: Forget,
        quiet: Quiet,
        let_go: LetGo,
        *,
        gone: Gone = lambda: None,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Keep what this node owns until cancelled (``address``: where it listens);
        ``gone`` is called when another node stops beating (its owed work is this one's to
        take up: the queue workers look again)."""

    async def release_all(self) -> None:
        """On a clean stop: whatever this node owns is free for the next one at once."""


class OneNode:
    """One node on its own store (LMDB): it owns every project, at epoch ``EPOCH``, always."""

    EPOCH = 0
    shared = False

    def clock_ms(self) -> int:
        return wall_clock_ms()

    async def take(self, project_id: str, *, ask: bool = False) -> int:
        return self.EPOCH

    async def give_back(self, project_id: str) -> None:
        return None

    def held(self, project_id: str, epoch: int | None = None) -> bool:
        return True

    async def claim(self, project_id: str) -> bool:
        return True

    def fence(self, project_id: str, epoch: int) -> list[Op]:
        return []  # no other writer to fence off

    async def run(
        self,
        address: str,
        forget: Forget,
        quiet: Quiet,
        let_go: LetGo,
        *,
        gone: Gone = lambda: None,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        task_status.started()  # nothing to renew, nobody to hand over to

    async def release_all(self) -> None:
        return None


ONE_NODE = OneNode()  # it holds nothing: one is as good as another


class _Asked:
    """A hand-over this node asked for: what the holder has said so far."""

    __slots__ = ("holder", "handing", "free")

    def __init__(self, holder: str) -> None:
        self.holder = holder
        self.handing = trio.Event()
        self.free = trio.Event()


class Leased:
    """Ownership by leases on a store that N nodes share (module docstring)."""

    shared = True

    def __init__(
        self,
        leases: Leases,
        clock: Callable[[], float] = trio.current_time,
        notices: Notices | None = None,
    ) -> None:
        self.leases = leases
        self._clock = clock
        self._notices = notices
        self._until: dict[str, float] = {}  # project id -> end of its lease, by our clock
        # project id -> until when its work is taken to be another node's (``claim``)
        self._elsewhere: dict[str, float] = {}
        self._away: dict[str, float] = {}  # project id -> until when not asked back
        self._silent: dict[str, float] = {}  # node id -> until when not asked (it never said)
        self._asked: dict[str, _Asked] = {}  # project id -> a hand-over this node waits for
        self._handing: set[str] = set()  # projects this node is handing over now
        self.lost = 0  # leases lost (taken over, moved, drained, expired unrenewed)
        self.handed = 0  # projects handed over to another node on its asking
        self.taken = 0  # projects taken over from another node on this one's asking
        self._forget_at = -math.inf  # when ``forget_gone`` is next due, by our clock

    def clock_ms(self) -> int:
        return self.leases.clock_ms()

    async def take(self, project_id: str, *, ask: bool = False) -> int:
        """This node's lease of the project (its epoch), or a retryable 503. ``ask``: a live
        lease of another node is asked for (a request for the project reached this node, so
        HAProxy sends it here now): the holder hands it over in well under a second."""
        epoch = self.leases.epoch(project_id)
        if epoch is not None and self.held(project_id):
            return epoch
        asked = self._clock()
        try:
            lease = await self.leases.acquire(project_id)
        except LeaseHeld as held:
            handed = await self._asked_for(project_id, held.owner) if ask else None
            if handed is None:
                raise Unavailable(
                    "unavailable",
                    f"This project is served by node {held.owner} now; retry.",
                    retryable=True,
                ) from None
            lease = handed
        self._until[project_id] = asked + self.leases.lease_s
        return lease.epoch

    async def _asked_for(self, project_id: str, holder: str) -> Lease | None:
        """The lease, handed over by ``holder`` on this node's asking; None if it did not
        (no word from it: dead or paused, its lease runs out on its own)."""
        now = self._clock()
        if (
            self._notices is None
            or now < self._away.get(project_id, -math.inf)
            or now < self._silent.get(holder, -math.inf)
            or project_id in self._asked
        ):
            return None
        self._asked[project_id] = asked = _Asked(holder)
        try:
            await self._notices.send(f"want {project_id} {holder} {self.leases.node_id}")
            with trio.move_on_after(ACK_S):
                await asked.handing.wait()
            if not asked.handing.is_set():
                self._silent[holder] = self._clock() + self.leases.lease_s / 3
                return None
            with trio.move_on_after(WAIT_S):
                await asked.free.wait()
            lease = await self.leases.acquire(project_id)  # missed ``free``: try all the same
        except (LeaseHeld, Unavailable):
            return None
        finally:
            del self._asked[project_id]
        self.taken += 1
        log.info("cluster: took %s over from node %s on asking", project_id, holder)
        return lease

    def heard(self, payload: str, hand_over: Callable[[str, str], None]) -> None:
        """A notice from ``edge.store.postgres.notices``: ``want P HOLDER ASKER`` (hand ``P`` over,
        if this node is ``HOLDER``), ``handing P HOLDER`` and ``free P HOLDER`` (the answers
        to an asking)."""
        word, project_id, holder, *rest = payload.split(" ") + ["", ""]
        if word == "want" and holder == self.leases.node_id and rest[0]:
            hand_over(project_id, rest[0])
            return
        asked = self._asked.get(project_id)
        if asked is None or asked.holder != holder:
            return
        if word == "handing":
            asked.handing.set()
        elif word == "free":
            asked.handing.set()
            asked.free.set()

    async def hand_over(self, project_id: str, asker: str, let_go: LetGo) -> None:
        """Another node was asked for the project: finish its started work here (up to
        ``GRACE_S``; ``let_go`` drops its actor), end the lease, and say so."""
        notices = self._notices
        if notices is None or project_id in self._handing:
            return
        me = self.leases.node_id
        self._handing.add(project_id)
        try:
            if self.leases.epoch(project_id) is None:  # not this node's (any more): go ahead
                await notices.send(f"free {project_id} {me}")
                return
            await notices.send(f"handing {project_id} {me}")
            await let_go(project_id, GRACE_S)
            self._until.pop(project_id, None)
            self._away[project_id] = self._elsewhere[project_id] = self._clock() + AWAY_S
            await self.leases.release(project_id)
            await notices.send(f"free {project_id} {me}")
            self.handed += 1
            log.info("cluster: handed %s over to node %s on its asking", project_id, asker)
        except Unavailable:
            pass  # the store is out of reach (told once, by the store): the lease runs out
        finally:
            self._handing.discard(project_id)

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

    def fence(self, project_id: str, epoch: int) -> list[Op]:
        return [lease_op(project_id, epoch)]

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
        self._away = {p: t for p, t in self._away.items() if t > asked}
        self._silent = {n: t for n, t in self._silent.items() if t > asked}
        lost = await self.leases.heartbeat()
        for project_id in lost:
            self._until.pop(project_id, None)
        for project_id in self.leases.held():
            self._until[project_id] = asked + self.leases.lease_s
        self.lost += len(lost)
        return lost

    async def run(
        self,
        address: str,
        forget: Forget,
        quiet: Quiet,
        let_go: LetGo,
        *,
        gone: Gone = lambda: None,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Beat until cancelled, recording this node alive at ``address``, and hand projects
        over when asked. A project ``quiet`` for a lease's length has its lease given back.
        Another node silent for a lease (dead, stopped, cut off) has let its leases lapse, or
        soon will: ``gone`` wakes the queue workers, which would otherwise sleep through what
        it owed (they learn of new entries from their own node only)."""
        self.leases.address = address
        await self.leases.heartbeat()  # the node is listed alive from its start
        async with trio.open_nursery() as nursery:
            if self._notices is not None:

                def hand_over(project_id: str, asker: str) -> None:
                    nursery.start_soon(self.hand_over, project_id, asker, let_go)

                await nursery.start(
                    self._notices.listen, lambda payload: self.heard(payload, hand_over)
                )
            task_status.started()
            await self._beat_forever(forget, quiet, gone)

    async def _beat_forever(self, forget: Forget, quiet: Quiet, gone: Gone) -> None:
        failing = False
        while True:
            await trio.sleep(self.leases.lease_s / 3)
            try:
                idle = [p for p in self.leases.held() if quiet(p, self.leases.lease_s)]
                if idle:
                    for project_id in idle:
                        self._until.pop(project_id, None)
                        forget(project_id)
                    await self.leases.release_all(idle)
                others = self.leases.others
                lost = await self.beat()
            except Unavailable:
                # PostgreSQL out of reach: the leases run out by our own clock (``held``)
                if not failing:
                    log.warning("cluster: heartbeat failed; leases lapse unless renewed in time")
                failing = True
                continue
            failing = False
            if others - self.leases.others:
                gone()
            for project_id in lost:
                log.info("cluster: lost the lease of %s; its actor is dropped", project_id)
                forget(project_id)
            await self.forget_gone()

    async def forget_gone(self) -> None:
        """Forget the nodes gone a week, once in ``FORGET_EVERY_S``: a statement of its own,
        after a beat and what it lost are dealt with, never between the two. Out of reach, it
        is tried again then."""
        if self._clock() < self._forget_at:
            return
        self._forget_at = self._clock() + FORGET_EVERY_S
        try:
            forgotten = await self.leases.forget_gone()
        except Unavailable:  # logged once, by the store
            return
        if forgotten:
            log.info("cluster: forgot %d nodes gone for a week", forgotten)

    async def release_all(self) -> None:
        """On a clean stop: every lease ends now, so the next node takes the projects at once."""
        self._until.clear()
        await self.leases.release_all()
