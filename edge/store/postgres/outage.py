"""The shared store out of reach, told once: one line when it goes, one when it is back.

A PostgreSQL restart or a terminated backend fails every statement in flight and every one
tried until it is back: reads, commits, the queues' passes, the heartbeat, the listener. Each
of those answers ``StoreUnavailable`` (a retryable 503) or tries again later; what the operator
needs is the outage, not one traceback per victim. Every statement reports here, from whatever
thread ran it: ``failed`` with the cause, ``ok`` after a success.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

log = logging.getLogger("edge.store")


SETTLE_S = 2.0  # back only once statements have worked this long with none failing


class Outage:
    def __init__(self, what: str = "PostgreSQL", clock: Callable[[], float] = time.monotonic):
        self._what = what
        self._clock = clock
        self._lock = threading.Lock()
        self._since: float | None = None  # the first failure's time, while down
        self._worked: float | None = None  # while down: the first success since the last failure
        self.failures = 0  # statements failed in the current (or last) outage
        self.outages = 0

    @property
    def down(self) -> bool:
        return self._since is not None

    def failed(self, exc: BaseException) -> None:
        with self._lock:
            self._worked = None
            self.failures += 1
            if self._since is not None:
                return
            self._since = self._clock()
            self.failures = 1
            self.outages += 1
        log.warning(
            "store: %s out of reach (%s); requests needing it answer 503 until it is back",
            self._what,
            cause(exc),
        )

    def ok(self) -> None:
        """A statement worked. The outage is over once they have worked for ``SETTLE_S``: a
        restart fails each connection opened before it once, one after the other, which is
        still the one outage."""
        if self._since is None:  # the common case, without the lock
            return
        now = self._clock()
        with self._lock:
            if self._since is None:
                return
            if self._worked is None:
                self._worked = now
                return
            if now - self._worked < SETTLE_S:
                return
            lasted, self._since, self._worked = self._worked - self._since, None, None
        log.warning(
            "store: %s is back after %.1f s (%d statements failed meanwhile)",
            self._what,
            lasted,
            self.failures,
        )


def cause(exc: BaseException) -> str:
    """A failure's class, SQLSTATE and first line, without what may be secret: PostgreSQL's
    messages name hosts and sockets, never the connection string's password."""
    state = getattr(exc, "sqlstate", None)
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    if "://" in first:  # a connection string's echo may carry its password
        first = ""
    named = type(exc).__name__ + (f", SQLSTATE {state}" if state else "")
    return f"{named}: {first}" if first else named
