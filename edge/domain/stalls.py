"""The node's own pauses, so that a client is never blamed for them (issue 35).

A task ticks every ``tick_s``; a tick that comes more than ``STALL_S`` late means the loop did
not run meanwhile (the process stopped by SIGSTOP, a long collection, a machine out of CPU).
A deadline that measures what a client did (an idle connection's, a request's headers', a
body's pace) is moved by every stall since it started: bytes a client sent on time are on time,
however late the node got round to reading them.

A deadline can fire before the ticking task has run again after a stall (both are due in the
same turn of the loop): so the stall under way, the time since the last tick, counts too.
Pure and clock-free: the caller passes ``now``.
"""

from __future__ import annotations

from collections import deque

TICK_S = 0.1
STALL_S = 0.1  # a tick later than this is a stall; less is the loop's ordinary jitter
KEPT_S = 3600.0  # stalls remembered: longer than any deadline that asks about them


class Stalls:
    __slots__ = ("tick_s", "_last", "_stalls", "count", "paused")

    def __init__(self, now: float, tick_s: float = TICK_S) -> None:
        self.tick_s = tick_s
        self._last = now
        # no ticking while no deadline asks (no client connected): an idle node wakes for
        # nothing; ``resume`` starts the count afresh before the next deadline asks
        self.paused = False
        self._stalls: deque[tuple[float, float]] = deque()  # (ended at, how long)
        self.count = 0

    def tick(self, now: float) -> float:
        """The ticking task ran at ``now``; how late it was (the loop's lag)."""
        lag = max(0.0, now - self._last - self.tick_s)
        self._last = now
        if lag > STALL_S:
            self._stalls.append((now, lag))
            self.count += 1
        while self._stalls and self._stalls[0][0] < now - KEPT_S:
            self._stalls.popleft()
        return lag

    def pause(self) -> None:
        self.paused = True

    def resume(self, now: float) -> None:
        """Ticking again from ``now``: the time paused was no stall."""
        if self.paused:
            self.paused = False
            self._last = now

    def since(self, start: float, now: float) -> float:
        """How long the node stood still between ``start`` and ``now``, the stall under way
        included (only its part after ``start``)."""
        ongoing = 0.0 if self.paused else now - self._last - self.tick_s
        stood = now - max(start, now - ongoing) if ongoing > STALL_S else 0.0
        for ended, length in reversed(self._stalls):
            if ended <= start:
                break
            stood += ended - max(start, ended - length)
        return max(0.0, stood)
