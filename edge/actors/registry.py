"""Project id -> its actor, made on first use and evicted when idle.

An actor is a plain object that owns its project's state, loaded from the store on first use
(one load per project however many callers arrive meanwhile). A message reaches it one of two
ways:
- at once, in the caller's task, when the actor is free (no task running for it, nothing
  queued) and the message needs no waiting (``handle_now`` takes it). There is no checkpoint
  from the check to the end of the handler, so this is still one message at a time, in order;
- else through a bounded mailbox, drained by a task that exists only while there is work (an
  actor reloading after a failed commit, or messages that arrived meanwhile). When the mailbox
  is empty the task ends and the actor is passive again: an idle project costs no task and no
  channel.

Guarantees:
- One actor per project; its messages are handled one by one, in arrival order.
- Mailboxes are bounded: a full one is backpressure up to the caller's timeout, then
  ``503 unavailable``.
- A reply goes into a one-shot slot that never blocks the actor; a caller that gave up is simply
  never read.
- An exception inside one actor answers that caller ``500 internal`` and the actor is rebuilt
  from the store (after its pending commits settle); other projects never notice.
- ``drain()`` refuses new work, lets started work finish, and returns when every actor is idle;
  actors say when they may have become idle (``ActorRef.settled``), so it waits on an event,
  never polls.

An actor reaches the registry only through its ``ActorRef`` (its own address): to send itself a
follow-up message (a provider call returning) and to learn that the node is stopping.
"""

from __future__ import annotations

import logging
import math
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, Protocol

import trio

from edge.errors import ContractError, Internal, Unavailable

log = logging.getLogger("edge.actors")

LET_GO_LOOK_S = 0.005

Reply = Callable[[Any], None]


class Actor(Protocol):
    def handle_now(self, message: Any, reply: Reply) -> bool:
        """Handle ``message`` without waiting, if it can; False sends it through the mailbox.
        Like ``handle``, it calls ``reply`` exactly once, now or later (after a commit)."""

    async def handle(self, message: Any, reply: Reply) -> None:
        """Handle one message and call ``reply`` exactly once, now or later (after a commit).
        Raising ``ContractError`` replies with it; raising anything else is a crash."""

    async def quiesce(self) -> None:
        """Wait until nothing this actor wrote is still waiting for its commit."""

    def idle(self) -> bool:
        """True when the actor holds nothing that eviction would lose (waiters, pending work)."""

    def release_waiters(self) -> None:
        """Answer every caller that is waiting for a change (long polls) now."""


class ActorRef:
    """An actor's own address: what it may ask of the registry."""

    __slots__ = ("_registry", "project_id")

    def __init__(self, registry: ActorRegistry, project_id: str) -> None:
        self._registry = registry
        self.project_id = project_id

    async def send(self, message: Any) -> Any:
        """Hand the actor a follow-up of its own work (a provider call returning) and return the
        reply. Taken even while the node drains, and never timed out: dropping it would leave
        started work half-done."""
        return await self._registry.call(self.project_id, message, math.inf, internal=True)

    @property
    def stopping(self) -> bool:
        """The node is stopping: long polls are answered at once."""
        return self._registry.stopping

    def settled(self) -> None:
        """Some of the actor's started work has ended: it may be idle now (``drain`` looks)."""
        self._registry._settled.set()


# Loads a project's actor from the store; raises project_not_found when the project does not exist.
ActorFactory = Callable[[str, ActorRef], Awaitable[Actor]]
# Is the project still this node's, for this actor of it (None: for any new one)?
Held = Callable[[str, Actor | None], bool]


def always_held(project_id: str, actor: Actor | None) -> bool:
    """A registry of its own (tests of one part): every project stays its."""
    return True


class _OneShot:
    """Where an actor puts its one reply: never blocks the sender. Its caller parks on it
    directly (no event, no cancel scope: a webhook waits on one for its commit, thousands a
    second); ``Overdue`` gives up on the ones awaited too long."""

    __slots__ = ("value", "done", "_task")

    def __init__(self) -> None:
        self.done = False
        self.value: Any = None
        self._task: trio.lowlevel.Task | None = None

    def __call__(self, value: Any) -> None:
        if self.done:
            return
        self.value, self.done = value, True
        task = self._task
        if task is not None:
            self._task = None
            trio.lowlevel.reschedule(task)

    async def wait(self) -> None:
        if not self.done:
            self._task = trio.lowlevel.current_task()
            await trio.lowlevel.wait_task_rescheduled(self._abort)

    def _abort(self, _: object) -> trio.lowlevel.Abort:
        self._task = None  # the caller was cancelled (its client left, the node stopped)
        return trio.lowlevel.Abort.SUCCEEDED


_OVERDUE = object()  # the reply given to a caller that waited past its time


class Overdue:
    """The replies awaited, each with the time its caller gives up: one task looks them over
    every ``tick_s`` while any is awaited, and answers the overdue ones ``_OVERDUE`` (a cancel
    scope per call would cost every request a deadline registered and withdrawn). A caller
    gives up between its time and a tick after it. The task ends with the registry's nursery,
    answering every reply still awaited, as no actor is left to; once that nursery is closed, a
    caller keeps its own time."""

    def __init__(self, nursery: trio.Nursery, tick_s: float) -> None:
        self._nursery = nursery
        self._tick_s = tick_s
        self._due: dict[_OneShot, float] = {}
        self._looking = False

    async def wait(self, reply: _OneShot, timeout_s: float) -> bool:
        """Wait for ``reply``; False when it did not come within ``timeout_s``."""
        if not self._looking:
            try:
                self._nursery.start_soon(self._look)
            except RuntimeError:  # the nursery is closed: nothing looks any more
                with trio.move_on_after(timeout_s):
                    await reply.wait()
                return reply.done and reply.value is not _OVERDUE
            self._looking = True
        self._due[reply] = trio.current_time() + timeout_s
        try:
            await reply.wait()
        finally:
            del self._due[reply]
        return reply.value is not _OVERDUE

    async def _look(self) -> None:
        try:
            while self._due:
                await trio.sleep(self._tick_s)
                now = trio.current_time()
                for reply in [r for r, due in self._due.items() if due <= now]:
                    reply(_OVERDUE)
        finally:
            self._looking = False
            for reply in list(self._due):
                reply(_OVERDUE)


class _Entry:
    __slots__ = ("actor", "send", "touched", "rebuild")

    def __init__(self, actor: Actor, now: float) -> None:
        self.actor = actor
        self.send: trio.MemorySendChannel[tuple[Any, Reply]] | None = None  # while a task runs
        self.touched = now
        self.rebuild = False  # crashed while it had pending writes: rebuild before the next message

    @property
    def running(self) -> bool:
        """A task is draining this actor's mailbox."""
        return self.send is not None


class ActorRegistry:
    def __init__(
        self,
        factory: ActorFactory,
        nursery: trio.Nursery,
        *,
        mailbox_size: int = 256,
        idle_s: float = 300.0,
        call_timeout_s: float = 30.0,
        held: Held = always_held,
    ) -> None:
        self._factory = factory
        # ``edge.actors.ownership``: is the project still this node's, at the epoch the actor
        # was made under (no actor: at any epoch)? An actor whose lease may have ended, or was
        # taken anew since (cluster mode), is dropped before it answers anything.
        self._held = held
        self.nursery = nursery  # where actors run work that must not hold them up
        self._mailbox_size = mailbox_size
        self._idle_s = idle_s
        self._call_timeout_s = call_timeout_s
        self._overdue = Overdue(nursery, min(1.0, call_timeout_s / 10))
        self._entries: dict[str, _Entry] = {}
        self._loading: dict[str, trio.Event] = {}  # projects whose actor is being loaded
        self._leaving: set[str] = set()  # projects being handed to another node (``let_go``)
        self._closing = False
        self.stopping = False  # long polls answer at once from now on
        self._sweeping: trio.CancelScope | None = None
        self._settled = trio.Event()  # set when an actor may have become idle
        self.restarts = 0

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, project_id: str) -> bool:
        return project_id in self._entries

    @property
    def running(self) -> int:
        """Actors with a task right now (the others are passive)."""
        return sum(entry.running for entry in self._entries.values())

    async def call(
        self,
        project_id: str,
        message: Any,
        timeout_s: float | None = None,
        *,
        internal: bool = False,
    ) -> Any:
        """Give ``message`` to the project's actor; return its reply, or raise its ContractError.

        ``internal`` marks an actor's own follow-up work (a provider call returning), which is
        still taken while the node drains, so nothing started is left half-done."""
        if self._closing and not internal:
            raise Unavailable("unavailable", "The node is shutting down.", retryable=True)
        if project_id in self._leaving and not internal:
            raise Unavailable(
                "unavailable", "The project is moving to another node; retry.", retryable=True
            )
        entry = self._entries.get(project_id)
        if entry is not None and not self._held(project_id, entry.actor):
            self.forget(project_id)
            entry = None
        if entry is None and internal and not self._held(project_id, None):
            # the follow-up of an actor dropped with its lease (its project handed over, or
            # lost): its caller retries where the project is now, never asks it back here
            raise Unavailable(
                "unavailable", "The project moved to another node; retry.", retryable=True
            )
        if entry is None:
            entry = await self._load(project_id)
        entry.touched = trio.current_time()
        reply = _OneShot()
        taken = not (entry.running or entry.rebuild) and self._now(
            project_id, entry, message, reply
        )
        if not taken:
            await self._enqueue(project_id, entry, message, reply, timeout_s)
        if not reply.done and not await self._overdue.wait(
            reply, timeout_s or self._call_timeout_s
        ):
            raise Unavailable("unavailable", "The project is busy; retry shortly.", retryable=True)
        if isinstance(reply.value, BaseException):
            raise reply.value
        return reply.value

    async def _load(self, project_id: str) -> _Entry:
        """The project's actor, loaded from the store by this caller or by the one already at
        it (a load whose reads give way must not make two actors of one project)."""
        while (entry := self._entries.get(project_id)) is None:
            if self._closing:  # drain waits only for actors it knows
                raise Unavailable("unavailable", "The node is shutting down.", retryable=True)
            loading = self._loading.get(project_id)
            if loading is None:
                return await self._load_now(project_id)
            await loading.wait()  # then its actor, or (its load failed) a load of our own
        return entry

    async def _load_now(self, project_id: str) -> _Entry:
        self._loading[project_id] = loaded = trio.Event()
        try:
            actor = await self._spawn(project_id)  # 404 for an unknown id
        finally:
            del self._loading[project_id]
            loaded.set()
        entry = self._entries[project_id] = _Entry(actor, trio.current_time())
        if self._sweeping is None:
            self._sweeping = trio.CancelScope()
            self.nursery.start_soon(self._sweep, self._sweeping)
        return entry

    async def _spawn(self, project_id: str) -> Actor:
        return await self._factory(project_id, ActorRef(self, project_id))

    def _now(self, project_id: str, entry: _Entry, message: Any, reply: _OneShot) -> bool:
        """Run ``message`` in this task if the actor takes it now; False if it must queue."""
        try:
            return entry.actor.handle_now(message, reply)
        except ContractError as failure:
            reply(failure)
        except Exception:
            self._crashed(project_id, entry, reply)
            self._start_task(project_id, entry)  # which rebuilds the actor first
        return True

    async def _enqueue(
        self, project_id: str, entry: _Entry, message: Any, reply: _OneShot, timeout_s: float | None
    ) -> None:
        send = entry.send or self._start_task(project_id, entry)
        try:
            send.send_nowait((message, reply))  # no checkpoint: cannot miss the task
        except trio.WouldBlock:
            with trio.move_on_after(timeout_s or self._call_timeout_s) as scope:
                await send.send((message, reply))  # full: the task is busy, not ending
            if scope.cancelled_caught:
                raise Unavailable(
                    "unavailable", "The project is busy; retry shortly.", retryable=True
                ) from None

    def _start_task(
        self, project_id: str, entry: _Entry
    ) -> trio.MemorySendChannel[tuple[Any, Reply]]:
        """The actor's mailbox and the task draining it (rebuilding the actor first, if due)."""
        send, receive = trio.open_memory_channel[tuple[Any, Reply]](self._mailbox_size)
        entry.send = send
        self.nursery.start_soon(self._drain_mailbox, project_id, entry, receive)
        return send

    async def _drain_mailbox(
        self, project_id: str, entry: _Entry, receive: trio.MemoryReceiveChannel[tuple[Any, Reply]]
    ) -> None:
        try:
            if entry.rebuild:
                await self._rebuild(project_id, entry)
            while True:
                try:
                    message, reply = receive.receive_nowait()
                except trio.WouldBlock:
                    break  # empty: with no checkpoint since, no sender can be left behind
                await self._handle(project_id, entry, message, reply)
        finally:
            entry.send = None
            receive.close()
            self._settled.set()

    async def _handle(self, project_id: str, entry: _Entry, message: Any, reply: Reply) -> None:
        try:
            await entry.actor.handle(message, reply)
        except ContractError as failure:
            reply(failure)
        except Exception:
            self._crashed(project_id, entry, reply)
            await self._rebuild(project_id, entry)

    def _crashed(self, project_id: str, entry: _Entry, reply: Reply) -> None:
        log.exception("actor of project %s crashed; rebuilding it from the store", project_id)
        reply(Internal("internal", "An unexpected fault; it has been logged."))
        self.restarts += 1
        entry.rebuild = True

    async def _rebuild(self, project_id: str, entry: _Entry) -> None:
        """Once the crashed actor's pending commits settle, a new one from the store."""
        await entry.actor.quiesce()
        entry.actor.release_waiters()  # the new actor would never wake the old one's long polls
        try:
            entry.actor = await self._spawn(project_id)
        except ContractError:
            log.warning("project %s vanished while rebuilding its actor", project_id)
        entry.rebuild = False

    def quiet(self, project_id: str, for_s: float) -> bool:
        """Nothing of the project is here that a move would lose: no actor, or one untouched
        for ``for_s`` that holds nothing (no task, no pending work, no waiters)."""
        entry = self._entries.get(project_id)
        if entry is None:
            return project_id not in self._loading
        return (
            trio.current_time() - entry.touched >= for_s
            and not entry.running
            and not entry.rebuild
            and entry.actor.idle()
        )

    async def let_go(self, project_id: str, grace_s: float) -> None:
        """Hand the project to another node: new messages are refused (retryable), long polls
        answered, started work finishes (up to ``grace_s``: what is left after has its writes
        refused by the store, fenced), then the actor is dropped."""
        self._leaving.add(project_id)
        try:
            with trio.move_on_after(grace_s):
                while project_id in self._loading or not self.quiet(project_id, 0.0):
                    entry = self._entries.get(project_id)
                    if entry is not None:
                        entry.actor.release_waiters()
                    # a hand-over is rare: a short look beats sharing ``drain``'s event
                    await trio.sleep(LET_GO_LOOK_S)
            self.forget(project_id)
        finally:
            self._leaving.discard(project_id)

    def forget(self, project_id: str) -> None:
        """Drop the project's actor: its lease is another node's now. Its parked long polls are
        answered; work it already holds finishes, and its writes are refused by the store (they
        carry its lease's epoch). The next message makes a new actor, under a new lease."""
        entry = self._entries.pop(project_id, None)
        if entry is not None:
            entry.actor.release_waiters()
            self._settled.set()

    async def _sweep(self, scope: trio.CancelScope) -> None:
        """Evict actors untouched for ``idle_s`` that hold nothing (one task for all)."""
        try:
            with scope:
                await self._sweep_forever()
        finally:
            self._sweeping = None

    async def _sweep_forever(self) -> None:
        while self._entries:
            await trio.sleep(max(0.01, self._idle_s / 4))
            for project_id in [p for p in self._entries if self.quiet(p, self._idle_s)]:
                del self._entries[project_id]

    def stop_waiting(self) -> None:
        """The node is stopping: answer long polls now and park no new ones, so in-flight
        requests finish at once instead of holding the HTTP server's graceful shutdown. Other
        work is still taken until ``drain``."""
        self.stopping = True
        for entry in self._entries.values():
            entry.actor.release_waiters()

    async def drain(self, grace_s: float = 15.0) -> None:
        """Refuse new work, and return once started work is done (or ``grace_s`` passed)."""
        self._closing = True
        self.stop_waiting()
        with trio.move_on_after(grace_s):
            while self._busy():
                self._settled = trio.Event()
                if not self._busy():  # settled between the look and the new event
                    break
                await self._settled.wait()
        if self._sweeping is not None:
            self._sweeping.cancel()

    def _busy(self) -> bool:
        return any(entry.running or not entry.actor.idle() for entry in self._entries.values())


@asynccontextmanager
async def open_registry(
    factory: ActorFactory,
    *,
    mailbox_size: int = 256,
    idle_s: float = 300.0,
    call_timeout_s: float = 30.0,
    grace_s: float = 15.0,
    held: Held = always_held,
) -> AsyncIterator[ActorRegistry]:
    """A registry with its own nursery, where actors' tasks and their background work (provider
    calls, long-poll timers) run. On a normal exit it drains (up to ``grace_s``) and then
    cancels what is left; on an error it cancels at once."""
    async with trio.open_nursery() as nursery:
        registry = ActorRegistry(
            factory,
            nursery,
            mailbox_size=mailbox_size,
            idle_s=idle_s,
            call_timeout_s=call_timeout_s,
            held=held,
        )
        try:
            yield registry
            await registry.drain(grace_s)
        finally:
            nursery.cancel_scope.cancel()
