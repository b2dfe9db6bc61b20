"""The single writer: every durable change of the node goes through here.

Callers ``submit`` a list of operations and get a ``Ticket``. The writer task takes every
ticket waiting at that moment, applies them all in one write transaction of its engine inside
one worker thread call (begin and commit in the same thread: an LMDB transaction split across
calls deadlocks later writers), commits with fsync, then resolves each ticket. The engine is
either of the store interface's (``edge.store.engine``); the writer knows neither. So under load
many callers share one fsync (group commit), and no caller is ever told "done" before its data
is on disk.

Guarantees:
- Tickets commit in submission order; a caller's later ticket never commits before its earlier.
- A ticket's callbacks run on the event loop after its commit, with ``None``, or with the
  exception when its writes failed (then nothing of that ticket was written).
- One bad ticket fails alone: when a group's transaction fails, each of its tickets is committed
  again on its own, in order, so the others land (a provider's retry is for its own delivery,
  never for a neighbour's).
- ``submit`` never blocks: backpressure belongs to the actors' bounded mailboxes.
- A ticket may assert what it read (``engine.expect_op``); when that no longer holds it fails
  alone with ``Contended``, writing nothing, and the rest of its group commits together.
- A commit that fails for want of room or of a working disk (the map or the disk full, an I/O
  error), or of its server, fails its tickets with ``StoreUnavailable``, a contract ``503
  unavailable`` the caller may retry: the engine says so in the interface's words, and a
  system's disk error (an ``OSError``) is said so here. Any other failure is a bug and keeps
  its own error (``Unclaimed``: a ticket that breaks the interface's claim rule).

Fault injection (tests only; production never sets it): ``with writer.inject(fault):`` calls
``fault(group)`` in the worker thread before each commit's transaction begins. A fault that
raises fails that commit as the disk would (nothing of the group is written), one that blocks is
a slow disk; returning lets the commit go on.
"""

from __future__ import annotations

import errno
import logging
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass

import trio

from edge.store.engine import Contended, Engine, Op, StoreUnavailable

log = logging.getLogger("edge.store")

Callback = Callable[[BaseException | None], None]

MAX_OPS_PER_COMMIT = 20_000


class StoreClosed(Exception):
    pass


_DISK_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EROFS})


def _unavailable(exc: Exception) -> Exception:
    """``exc`` as the caller should see it: ``StoreUnavailable`` when the system says the disk
    cannot take the commit for now (the engines say so themselves)."""
    if isinstance(exc, OSError) and exc.errno in _DISK_ERRNOS:
        failure = StoreUnavailable(
            "unavailable",
            "The store cannot commit now (no room, or a disk fault); retry later.",
        )
        failure.__cause__ = exc
        return failure
    return exc


class Ticket:
    __slots__ = ("ops", "_callbacks", "done", "error")

    def __init__(self, ops: Sequence[Op]) -> None:
        self.ops = ops
        self._callbacks: list[Callback] = []
        self.done = False
        self.error: BaseException | None = None

    def when_durable(self, callback: Callback) -> None:
        """Run ``callback(error)`` after the commit, or now if it already happened."""
        if self.done:
            callback(self.error)
        else:
            self._callbacks.append(callback)

    async def wait(self) -> None:
        """Wait for the commit; raise its error if it failed."""
        if not self.done:
            event = trio.Event()
            self._callbacks.append(lambda _error: event.set())
            await event.wait()
        if self.error is not None:
            raise self.error

    def _resolve(self, error: BaseException | None) -> None:
        self.done = True
        self.error = error
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            try:
                callback(error)
            except Exception:
                log.exception("ticket callback failed")


# called with a commit's group of tickets, in the worker thread, before its transaction begins
Fault = Callable[[Sequence[Ticket]], None]


@dataclass
class WriterStats:
    commits: int = 0
    tickets: int = 0
    ops: int = 0
    failures: int = 0
    # seconds the engine's commits took in the worker thread (the writes and their syncs), and
    # from handing each to the thread until the loop had it back (the thread hand-offs too):
    # what a caller waits for a commit, beside what it waits for the one before it
    engine_s: float = 0.0
    round_trip_s: float = 0.0

    def tickets_per_commit(self) -> float:
        return self.tickets / self.commits if self.commits else 0.0

    def commit_ms(self) -> float:
        return 1000 * self.engine_s / self.commits if self.commits else 0.0

    def round_trip_ms(self) -> float:
        return 1000 * self.round_trip_s / self.commits if self.commits else 0.0


class StoreWriter:
    def __init__(self, store: Engine) -> None:
        self._store = store
        self._queue: deque[Ticket] = deque()
        self._wakeup = trio.Event()
        self._closing = False
        self._limiter = trio.CapacityLimiter(1)
        self.stats = WriterStats()
        self.fault: Fault | None = None  # see ``inject``; never set in production

    @contextmanager
    def inject(self, fault: Fault) -> Iterator[None]:
        """Tests' seam: ``fault(group)`` runs before each commit inside the block (in the worker
        thread, before the transaction begins). Raising fails the commit as a failing disk would;
        blocking holds it, as a slow disk. The fault in place before is put back on leaving."""
        before, self.fault = self.fault, fault
        try:
            yield
        finally:
            self.fault = before

    def submit(self, ops: Sequence[Op]) -> Ticket:
        if self._closing:
            raise StoreClosed("the store is shutting down")
        ticket = Ticket(ops)
        self._queue.append(ticket)
        self._wakeup.set()
        return ticket

    async def write(self, ops: Sequence[Op]) -> None:
        await self.submit(ops).wait()

    def close(self) -> None:
        """Stop taking work; ``run`` returns once everything already submitted is committed."""
        self._closing = True
        self._wakeup.set()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        while True:
            if not self._queue:
                if self._closing:
                    return
                await self._wakeup.wait()
                self._wakeup = trio.Event()
                continue
            group = self._take_group()
            error = await self._commit_group(group)
            while isinstance(error, Contended) and len(group) > 1:
                # a lost race fails its own ticket; the others commit together, as they came
                group.pop(error.ticket)._resolve(error)
                error = await self._commit_group(group)
            if error is None:
                for ticket in group:
                    ticket._resolve(None)
                continue
            if isinstance(error, Contended):  # a lost race its caller settles, not a fault
                log.info("commit of %d tickets: an expectation did not hold", len(group))
            elif isinstance(error, StoreUnavailable) and error.told:
                pass  # the engine has told the outage, once
            else:
                log.error("commit of %d tickets failed: %r", len(group), error.__cause__ or error)
            if len(group) == 1:
                group[0]._resolve(error)
                continue
            for ticket in group:  # nothing of the group was written: each on its own now
                ticket._resolve(await self._commit_group([ticket]))

    async def _commit_group(self, group: list[Ticket]) -> BaseException | None:
        handed = time.perf_counter()
        try:
            # Not cancellable: a commit is never abandoned half-way by a cancelled caller.
            engine_s = await trio.to_thread.run_sync(self._commit, group, limiter=self._limiter)
        except Contended as lost:  # nothing of the group was written
            return lost
        except Exception as exc:  # nothing of the group was written
            self.stats.failures += 1
            return _unavailable(exc)
        self.stats.round_trip_s += time.perf_counter() - handed
        self.stats.engine_s += engine_s
        self.stats.commits += 1
        self.stats.tickets += len(group)
        self.stats.ops += sum(len(t.ops) for t in group)
        return None

    def _take_group(self) -> list[Ticket]:
        group: list[Ticket] = []
        ops = 0
        while self._queue and (not group or ops + len(self._queue[0].ops) <= MAX_OPS_PER_COMMIT):
            ticket = self._queue.popleft()
            ops += len(ticket.ops)
            group.append(ticket)
        return group

    def _commit(self, group: list[Ticket]) -> float:
        """The group's commit, in the worker thread; the seconds the engine took."""
        if self.fault is not None:
            self.fault(group)
        began = time.perf_counter()
        self._store.commit([ticket.ops for ticket in group])
        return time.perf_counter() - began


@asynccontextmanager
async def open_writer(store: Engine) -> AsyncIterator[StoreWriter]:
    """A running writer for ``store``. On exit it stops taking work and returns once everything
    already submitted is committed (so the store may close right after)."""
    writer = StoreWriter(store)
    async with trio.open_nursery() as nursery:
        await nursery.start(writer.run)
        try:
            yield writer
        finally:
            writer.close()
