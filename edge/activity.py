"""The node's recent activity, in memory, for ``edge logs --follow`` (like ``stripe logs
tail``): every request answered and every notification attempt, as they happen.

A ring of the last ``SIZE`` lines; each has a sequence number, so a reader pages on from the
last one it saw and may wait (a long poll) for the next. Nothing of the buyer or of a secret
is kept: a request's method, path (never its query string or body), status, time and request
id; an attempt's endpoint, event, answer and outcome. Lost at a restart, by design: the
durable records are the event feed and the endpoints' attempt logs.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

import trio

from edge.domain.timefmt import iso_ms

SIZE = 2000
# its own long polls would fill the ring with themselves
UNLOGGED = "/api/manage/logs"
_PROJECT = re.compile(r"prj_[0-9a-hjkmnp-tv-z]{16}")

Line = dict[str, Any]
# a request as the ring keeps it: (seq, at ms, method, path, status, seconds, request id), put in
# words only when read (every request adds one; few are ever read)
_Request = tuple[int, int, str, str, int, float, str]


class ActivityLog:
    def __init__(self, clock_ms: Callable[[], int], size: int = SIZE) -> None:
        self._clock_ms = clock_ms
        self._lines: deque[Line | _Request] = deque(maxlen=size)
        self._seq = 0
        self._waiting = 0
        self._added = trio.Event()

    @property
    def last(self) -> int:
        """The sequence number of the latest line (0 before the first)."""
        return self._seq

    def request(self, method: str, path: str, status: int, seconds: float, request_id: str) -> None:
        if path == UNLOGGED:
            return
        self._seq += 1
        self._lines.append((self._seq, self._clock_ms(), method, path, status, seconds, request_id))
        self._tell()

    def notification(self, attempt: Mapping[str, Any]) -> None:
        """An attempt to notify a merchant's endpoint, as the notifier recorded it."""
        self._add(
            {
                "kind": "notification",
                "projectId": attempt["projectId"],
                "endpointId": attempt["endpointId"],
                "eventId": attempt["eventId"],
                "attempt": attempt["number"],
                "status": attempt["status"],
                "outcome": attempt["outcome"],
                "durationMs": attempt["durationMs"],
                "error": attempt["detail"] or None,
            }
        )

    def after(self, seq: int, keep: Callable[[Line], bool], limit: int) -> list[Line]:
        """Up to ``limit`` lines after ``seq`` that ``keep`` takes, oldest first."""
        found = []
        for kept in self._lines:
            if (kept[0] if isinstance(kept, tuple) else kept["seq"]) <= seq:
                continue
            line = _request_line(kept) if isinstance(kept, tuple) else kept
            if keep(line):
                found.append({**line, "at": iso_ms(line["at"])})
                if len(found) == limit:
                    break
        return found

    async def wait_past(self, seq: int, timeout_s: float) -> None:
        """Return once a line after ``seq`` is added, or after ``timeout_s``."""
        if self._seq > seq:
            return
        self._waiting += 1
        try:
            with trio.move_on_after(timeout_s):
                await self._added.wait()
        finally:
            self._waiting -= 1

    def _add(self, line: Line) -> None:
        self._seq += 1
        # the time is put in words when read: a request's cost stays an append
        self._lines.append({"seq": self._seq, "at": self._clock_ms(), **line})
        self._tell()

    def _tell(self) -> None:
        if self._waiting:  # a new event only when someone waits: every request adds a line
            self._added.set()
            self._added = trio.Event()


def _request_line(kept: _Request) -> Line:
    seq, at, method, path, status, seconds, request_id = kept
    found = _PROJECT.search(path)
    return {
        "seq": seq,
        "at": at,
        "kind": "request",
        "projectId": found.group(0) if found else None,
        "method": method,
        "path": path,
        "status": status,
        "durationMs": round(seconds * 1000, 1),
        "requestId": request_id,
    }
