"""The times a client connection must keep to (CONTRACT 8), pure and clock-free.

The caller passes ``now`` (seconds, any monotonic origin) and turns what comes back into a
cancel scope's deadline; nothing here reads a clock or does I/O.

A connection is always in one of three phases:

- **idle**: no byte of a next request yet; cut ``keep_alive_s`` after it fell idle;
- **headers**: a request's first byte has come, its headers are not complete; cut
  ``header_timeout_s`` after that first byte (slowloris: one header line every few seconds
  never looks idle for long, the whole must still arrive in time);
- **busy**: a request is being handled. No connection deadline: a long poll may keep a
  connection silent while the node works, and a body keeps its own pace (``body_deadline``).
"""

from __future__ import annotations

import math

IDLE, HEADERS, BUSY = "idle", "headers", "busy"


class RequestClock:
    """One connection's phase and the deadline that goes with it."""

    __slots__ = ("keep_alive_s", "header_timeout_s", "phase", "deadline", "since")

    def __init__(self, keep_alive_s: float, header_timeout_s: float, now: float) -> None:
        self.keep_alive_s = keep_alive_s
        self.header_timeout_s = header_timeout_s
        self.phase = IDLE
        self.deadline = now + keep_alive_s
        self.since = now  # when the phase began

    def idle(self, now: float) -> float:
        """The last answer is out and the connection waits for another request."""
        self.phase = IDLE
        self.deadline = now + self.keep_alive_s
        self.since = now
        return self.deadline

    def received(self, now: float) -> float:
        """Bytes came in: when idle, they are a request's first, and its headers' time starts.
        In any other phase the deadline is unchanged (more header bytes do not buy time)."""
        if self.phase is IDLE:
            self.phase = HEADERS
            self.deadline = now + self.header_timeout_s
            self.since = now
        return self.deadline

    def busy(self) -> float:
        """A request's headers are complete: its handling has no connection deadline."""
        self.phase = BUSY
        self.deadline = math.inf
        return self.deadline


def body_deadline(begun: float, received: int, min_rate: float, grace_s: float) -> float:
    """When more of a body must have come, ``received`` bytes having come since its headers
    ended at ``begun``: it must average ``min_rate`` bytes a second, the first ``grace_s``
    seconds free (a small body after a short pause is not cut)."""
    return begun + grace_s + received / min_rate
