"""Project id -> running actor, spawned on first use and evicted when idle.

Guarantees:
- One actor per project at a time; it handles its messages one by one, in arrival order.
- Mailboxes are bounded: when one is full the caller waits (backpressure) up to its timeout and
  then gets ``503 unavailable``, rather than the node growing without bound.
- A reply travels on a one-shot channel of buffer 1 and the actor sends with ``send_nowait``,
  so a caller that gave up can never block the actor.
- An exception inside one actor answers that one caller ``500 internal``, then the actor is
  rebuilt from the store; other projects never notice.
- ``drain()`` lets every actor finish what is already in its mailbox, then stops them.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import trio

from edge.failures import Failure

log = logging.getLogger("edge.actors")

Reply = Callable[[Any], None]


class Actor(Protocol):
    def handle(self, message: Any, reply: Reply) -> Awaitable[None]:
        """Handle one message and call ``reply`` exactly once, now or later (after a commit).
        Raising ``Failure`` replies with it; raising anything else is a crash."""

    async def quiesce(self) -> None:
        """Wait until nothing this actor wrote is still waiting for its commit."""

    def idle(self) -> bool:
        """True when the actor holds nothing that eviction would lose (waiters, pending work)."""


# Loads a project's actor from the store; raises Failure(404) when the project does not exist.
ActorFactory = Callable[[str], Actor]


class _Entry:
    __slots__ = ("send", "receive", "restarts")

    def __init__(self, size: int) -> None:
        self.send, self.receive = trio.open_memory_channel[tuple[Any, Reply]](size)
        self.restarts = 0


class ActorRegistry:
    def __init__(
        self,
        factory: ActorFactory,
        nursery: trio.Nursery,
        *,
        mailbox_size: int = 256,
        idle_s: float = 300.0,
        call_timeout_s: float = 30.0,
    ) -> None:
        self._factory = factory
        self._nursery = nursery
        self._mailbox_size = mailbox_size
        self._idle_s = idle_s
        self._call_timeout_s = call_timeout_s
        self._entries: dict[str, _Entry] = {}
        self._actors: dict[str, Actor] = {}
        self._closing = False
        self._running = 0
        self._all_stopped = trio.Event()
        self._all_stopped.set()
        self.restarts = 0

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, project_id: str) -> bool:
        return project_id in self._entries

    async def call(
        self,
        project_id: str,
        message: Any,
        timeout_s: float | None = None,
        *,
        internal: bool = False,
    ) -> Any:
        """Send ``message`` to the project's actor and return its reply (or raise its Failure).

        ``internal`` marks an actor's own follow-up work (a provider call returning), which is
        still taken while the node drains, so nothing started is left half-done."""
        if self._closing and not internal:
            raise Failure(503, "unavailable", "The node is shutting down.", retryable=True)
        reply_send, reply_receive = trio.open_memory_channel[Any](1)

        def reply(value: Any) -> None:
            try:
                reply_send.send_nowait(value)
            except (trio.WouldBlock, trio.BrokenResourceError, trio.ClosedResourceError):
                pass  # replied twice, or the caller is gone: never block the actor

        with trio.move_on_after(timeout_s or self._call_timeout_s) as scope:
            while True:
                entry = self._entry(project_id, internal)
                try:
                    await entry.send.send((message, reply))
                    break
                except trio.BrokenResourceError:
                    continue  # evicted between lookup and send: spawn a fresh one
                except trio.ClosedResourceError:
                    raise Failure(503, "unavailable", "The node is shutting down.", retryable=True) from None
            result = await reply_receive.receive()
        if scope.cancelled_caught:
            raise Failure(503, "unavailable", "The project is busy; retry shortly.", retryable=True)
        if isinstance(result, BaseException):
            raise result
        return result

    def _entry(self, project_id: str, internal: bool) -> _Entry:
        entry = self._entries.get(project_id)
        if entry is not None:
            return entry
        if self._closing:  # even for internal work: drain waits only for what it knows
            raise Failure(503, "unavailable", "The node is shutting down.", retryable=True)
        actor = self._factory(project_id)  # raises Failure(404) for an unknown project
        entry = _Entry(self._mailbox_size)
        self._entries[project_id] = entry
        self._actors[project_id] = actor
        self._running += 1
        self._all_stopped = trio.Event()
        self._nursery.start_soon(self._run, project_id, entry, actor)
        return entry

    async def _run(self, project_id: str, entry: _Entry, actor: Actor) -> None:
        try:
            try:
                while True:
                    message = await self._next(entry, actor)
                    if message is None:
                        break
                    actor = await self._handle(project_id, entry, actor, message)
            finally:
                # No checkpoint since the decision to stop: nothing can be sent in between, and
                # a sender from now on gets BrokenResourceError and spawns a fresh actor.
                if self._entries.get(project_id) is entry:
                    del self._entries[project_id]
                    del self._actors[project_id]
                entry.receive.close()
            await actor.quiesce()
        finally:
            self._running -= 1
            if self._running == 0:
                self._all_stopped.set()

    async def _next(self, entry: _Entry, actor: Actor) -> tuple[Any, Reply] | None:
        """The next message, or None when the actor should stop (idle, or draining and empty)."""
        while True:
            try:
                return entry.receive.receive_nowait()
            except trio.WouldBlock:
                pass
            except trio.EndOfChannel:
                return None
            with trio.move_on_after(self._idle_s if not self._closing else math.inf):
                try:
                    return await entry.receive.receive()
                except trio.EndOfChannel:
                    return None
            # Idle: evict only when nothing is lost. No checkpoint between the empty-check and
            # the close, so no sender can slip a message in between.
            if actor.idle() and entry.receive.statistics().current_buffer_used == 0:
                return None

    async def _handle(
        self, project_id: str, entry: _Entry, actor: Actor, message: tuple[Any, Reply]
    ) -> Actor:
        payload, reply = message
        try:
            await actor.handle(payload, reply)
        except Failure as failure:
            reply(failure)
        except Exception:
            log.exception("actor of project %s crashed; restarting it from the store", project_id)
            reply(Failure(500, "internal", "An unexpected fault; it has been logged."))
            await actor.quiesce()
            entry.restarts += 1
            self.restarts += 1
            try:
                actor = self._factory(project_id)
                self._actors[project_id] = actor
                return actor
            except Failure:
                log.warning("project %s vanished while restarting its actor", project_id)
        return actor

    async def drain(self, grace_s: float = 15.0) -> None:
        """Refuse new work, let started work finish (up to ``grace_s``), then let every actor
        empty its mailbox and stop."""
        self._closing = True
        with trio.move_on_after(grace_s):
            while not all(actor.idle() for actor in self._actors.values()):
                await trio.sleep(0.01)
        for entry in list(self._entries.values()):
            entry.send.close()
        await self._all_stopped.wait()
