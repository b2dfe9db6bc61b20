"""Waiting in tests for what is awaited, never for a while and hoping it has happened.

- ``Pulse``: for a test's own stand-ins (a receiver, a scripted provider, a callback the code
  under test takes, such as the notifier's ``observed``): ``fire()`` at each change, and
  ``await pulse.until(predicate)`` looks again at each one. It never polls, so under an autojump
  clock time moves only to the deadlines of the code under test.
- ``until_notified``: for state other threads change under a ``threading.Condition``.
- ``sending``: an event set when an httpx client is about to send a matching request (a
  provider call under way).
- ``notifications_settled`` and ``follow_ups_settled``: a node in this trio run has nothing
  left to notify, or owes no provider call now.
- ``until``: for state nothing announces (the store written by a child process, another
  server's answers): looked at again every ``every`` seconds. The last resort, and the one
  polling sleep of the suite.

Each fails with an ``AssertionError`` naming ``what`` never happened and how long was waited.
Timeouts are in the run's clock: virtual under a ``MockClock``, where ``Pulse.until`` may take
``timeout_s=None``.

- ``bound(seconds)``: every wall-clock bound of the suite that guards against a hang (a
  ``trio.fail_after``, a client's or a child process's ``timeout``, and the helpers' here),
  times ``EDGE_TEST_TIME_SCALE`` (default 1; a busy machine sets, say, 3), read here and
  nowhere else. Under a ``MockClock`` a bound is virtual time and stays as given; a bound that
  is itself the behaviour under test (a deadline the node must meet, a client made impatient
  on purpose) is written without it.
"""

from __future__ import annotations

import inspect
import math
import os
import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import httpx
import trio
import trio.testing

from edge.store import notifyq, outbox

T = TypeVar("T")


def _time_scale() -> float:
    raw = os.environ.get("EDGE_TEST_TIME_SCALE", "").strip()
    if not raw:
        return 1.0
    try:
        scale = float(raw)
    except ValueError:
        scale = math.nan
    if not 1 <= scale < math.inf:  # never smaller bounds (and no NaN)
        raise ValueError(f"EDGE_TEST_TIME_SCALE must be a number of at least 1, not {raw!r}")
    return scale


TIME_SCALE = _time_scale()


def bound(seconds: float) -> float:
    """``seconds`` as a bound against a hang, in the wall clock: times ``EDGE_TEST_TIME_SCALE``.
    Under trio's ``MockClock`` (virtual time: nothing there waits for a busy machine) it is
    ``seconds`` as given. Outside a trio run (a child process's ``wait``) it is scaled."""
    try:
        clock = trio.lowlevel.current_clock()
    except RuntimeError:  # not in a trio run
        return seconds * TIME_SCALE
    return seconds if isinstance(clock, trio.testing.MockClock) else seconds * TIME_SCALE


def _never(what: str, timeout_s: float | None) -> AssertionError:
    return AssertionError(f"never happened within {timeout_s} s: {what}")


async def until(
    predicate: Callable[[], T | Awaitable[T]],
    *,
    what: str,
    timeout_s: float = 10.0,
    every: float = 0.02,
) -> T:
    """``predicate()``'s first true value (it may be async), looked at every ``every`` s."""
    timeout_s = bound(timeout_s)
    with trio.move_on_after(timeout_s):
        while True:
            holds = predicate()
            if inspect.isawaitable(holds):
                holds = await holds
            if holds:
                return holds  # type: ignore[return-value]
            await trio.sleep(every)  # nothing announces this change: look again
    raise _never(what, timeout_s)


class Pulse:
    """Wakes whoever waits on it at each ``fire()`` (from the trio thread; it takes and ignores
    arguments, so it can stand as any callback)."""

    def __init__(self) -> None:
        self._event = trio.Event()
        self.fired = 0

    def fire(self, *_: Any) -> None:
        self.fired += 1
        self._event.set()
        self._event = trio.Event()

    async def until(
        self,
        predicate: Callable[[], T | Awaitable[T]],
        *,
        what: str,
        timeout_s: float | None = 10.0,
    ) -> T:
        """``predicate()``'s first true value (it may be async, such as a store read), looked
        at now and after each ``fire()``."""
        timeout_s = None if timeout_s is None else bound(timeout_s)
        with trio.move_on_after(math.inf if timeout_s is None else timeout_s):
            while True:
                # the event to wait on is taken before an awaited look: a fire() during the
                # look wakes the wait that follows it
                fired = self._event
                holds = predicate()
                if inspect.isawaitable(holds):
                    holds = await holds
                if holds:
                    return holds  # type: ignore[return-value]
                await fired.wait()
        raise _never(what, timeout_s)


async def until_notified(
    condition: threading.Condition,
    predicate: Callable[[], bool],
    *,
    what: str,
    timeout_s: float = 10.0,
) -> None:
    """Once ``predicate()`` holds, for state that other threads change holding ``condition``
    and ``notify_all`` at each change; waited for in a worker thread."""
    timeout_s = bound(timeout_s)

    def wait() -> bool:
        with condition:
            return condition.wait_for(predicate, timeout_s)

    if not await trio.to_thread.run_sync(wait, abandon_on_cancel=True):
        raise _never(what, timeout_s)


@contextmanager
def sending(
    client: httpx.AsyncClient, matches: Callable[[httpx.Request], bool]
) -> Iterator[trio.Event]:
    """An event set when ``client`` is about to send a request that ``matches`` (its request
    hook), for as long as the block lasts."""
    sent = trio.Event()

    async def hook(request: httpx.Request) -> None:
        if matches(request):
            sent.set()

    hooks = client.event_hooks
    client.event_hooks = {**hooks, "request": [*hooks["request"], hook]}
    try:
        yield sent
    finally:
        hooks = client.event_hooks
        client.event_hooks = {**hooks, "request": [h for h in hooks["request"] if h is not hook]}


async def notifications_settled(node: Any, timeout_s: float = 10.0) -> None:
    """Once the node (running in this trio run) has nothing left to notify: no event still to
    fan out, no notification pending. What it will ever send for the events so far is sent."""

    async def emptied() -> bool:
        return await notifyq.depth(node.ctx.store, 1) == 0

    await until(emptied, what="the node's notification queue emptied", timeout_s=timeout_s)


async def follow_ups_settled(node: Any, tx_id: str, timeout_s: float = 10.0) -> None:
    """Once the node (running in this trio run) owes no provider call now: nothing due in its
    follow-up queue. Each attempt it records for ``tx_id`` wakes the wait, so it is for tests
    whose due follow-ups are that transaction's."""
    timeout_s = bound(timeout_s)
    with trio.move_on_after(timeout_s):
        while True:
            with node.ctx.attempts.expecting(tx_id) as attempted:
                if not await outbox.due(node.ctx.store, node.ctx.clock_ms(), 1):
                    return
                await attempted.wait()
    raise _never(f"the node's follow-ups of {tx_id} settled", timeout_s)
