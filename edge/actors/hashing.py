"""Password hashing off the event loop, bounded (CONTRACT 4.7, docs/operations.md).

One scrypt try holds 16 MiB for tens of milliseconds (``edge.domain.passwords``). Run in
threads without a bound, a burst of logins or sign-ups is a burst of memory: each thread's
allocator keeps what it once held. So at most ``workers`` hashes run at once, at most
``waiting`` more callers queue for a turn, and anyone past that is answered ``429 rate_limited``
with ``Retry-After`` at once, before any hashing, rather than adding to a queue that only grows.

The workers are threads of their own, started once and kept for the node's life: the memory a
hash uses stays with the same few threads instead of spreading over every thread trio's pool
ever lends.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from contextlib import suppress
from typing import Any, TypeVar

import trio

from edge.errors import RateLimited

T = TypeVar("T")

RETRY_AFTER_S = 1  # a full queue drains in well under a second at tens of ms a hash

# what to call, and where its outcome goes: (True, value) or (False, the exception)
_Job = tuple[Callable[[], Any], Callable[[tuple[bool, Any]], None]]


class HashingPool:
    """``run(fn, *args)``: ``fn(*args)`` on one of the pool's threads, started at the first
    call; ``close()`` stops them."""

    def __init__(self, workers: int = 2, waiting: int = 16) -> None:
        self.workers = workers
        self.waiting = waiting
        self._turns = trio.Semaphore(workers)
        self._admitted = 0  # callers running or waiting
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []

    def close(self) -> None:
        for _ in self._threads:
            self._jobs.put(None)
        for thread in self._threads:
            thread.join()
        self._threads.clear()

    @property
    def admitted(self) -> int:
        return self._admitted

    async def run(self, fn: Callable[..., T], *args: object) -> T:
        """``fn(*args)`` in a worker thread; ``429 rate_limited`` when ``workers`` run and
        ``waiting`` more wait already. Cancelled while waiting, the call is not made; once
        begun, it is waited for (a hash is short, and its thread is not left behind)."""
        if self._admitted >= self.workers + self.waiting:
            raise RateLimited(
                "rate_limited",
                f"The node is busy checking passwords; retry in {RETRY_AFTER_S} s.",
                retryable=True,
                headers={"Retry-After": str(RETRY_AFTER_S)},
            )
        if not self._threads:
            self._start()
        self._admitted += 1
        try:
            async with self._turns:
                return await self._in_thread(lambda: fn(*args))
        finally:
            self._admitted -= 1

    async def _in_thread(self, call: Callable[[], T]) -> T:
        token = trio.lowlevel.current_trio_token()
        done = trio.Event()
        result: list[tuple[bool, Any]] = []

        def deliver(got: tuple[bool, Any]) -> None:
            result.append(got)
            with suppress(trio.RunFinishedError):  # the node was killed meanwhile
                token.run_sync_soon(done.set)

        self._jobs.put((call, deliver))
        with trio.CancelScope(shield=True):
            await done.wait()
        ok, value = result[0]
        if not ok:
            raise value
        return value  # type: ignore[no-any-return]

    def _start(self) -> None:
        for number in range(self.workers):
            thread = threading.Thread(target=self._work, name=f"edge-hashing-{number}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def _work(self) -> None:
        while (job := self._jobs.get()) is not None:
            call, deliver = job
            try:
                got = (True, call())
            except Exception as exc:
                got = (False, exc)
            deliver(got)
