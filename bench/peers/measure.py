"""One measured run: ``wrk`` (closed loop, ``bench.wrk``'s connections, on the load CPU) against
one server, with the CPU its process and its database spent over the run, and the check that
follows every run.

CPU is read from ``/proc`` before and after: the server's process (every thread, so SQLite's
work in the app's threads and LMDB's in the node's are the app's), and PostgreSQL's postmaster
with every process under it (a backend per connection; one born during the run counts whole).
``cpu0_others`` is what else kept the servers' CPU busy meanwhile: a shared machine's other
work, which the figures cannot correct for but can show.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import wrk
from bench.cluster import CLK_TCK, children, cpu_seconds
from bench.peers.databases import PeersPostgres
from bench.peers.workload import Pool
from bench.servers import SERVER_CPU, Server

SETTLE_S = 1.0  # after a run, for the requests in flight at its end to finish before counting


@dataclass
class Target:
    """A server under load: the node (``edge``) or a peer."""

    label: str
    server: Server
    stored: Callable[[], int]  # the events it has stored so far
    postgres: PeersPostgres | None = None


@dataclass
class Sample:
    label: str
    kind: str  # "status" or "webhook"
    rps: float
    requests: int
    seconds: float
    non_2xx: int  # answers other than 2xx
    socket_errors: int  # connections refused, cut or timed out (wrk's 10 s)
    app_s: float  # CPU seconds of the server's process
    db_s: float  # CPU seconds of PostgreSQL's processes (0 for the node and SQLite)
    cpu0_others_s: float
    stored: int  # events stored over the run (webhook runs)
    acknowledged: tuple[int, int]  # distinct event ids answered: at least, at most

    def ms(self, with_db: bool = True) -> float:
        """CPU milliseconds a request: the server's, and its database's unless ``with_db`` is
        false."""
        spent = self.app_s + (self.db_s if with_db else 0.0)
        return 1000 * spent / self.requests if self.requests else float("nan")

    @property
    def failures(self) -> int:
        return self.non_2xx + self.socket_errors

    @property
    def stored_ok(self) -> bool:
        """Every event acknowledged is stored, and nothing else (but the requests in flight)."""
        low, high = self.acknowledged
        return self.kind == "status" or low <= self.stored <= high

    def describe(self) -> str:
        text = (
            f"{self.rps:8.1f} req/s, CPU {self.ms():.3f} ms/req"
            f" (app {self.ms(with_db=False):.3f}, database {self.ms() - self.ms(False):.3f};"
            f" others on CPU {SERVER_CPU} {self.cpu0_others_s / self.seconds:.2f})"
        )
        if self.kind == "webhook":
            low, high = self.acknowledged
            text += f", {self.stored} events stored for {low}-{high} distinct acknowledged"
        if self.failures:
            text += f", FAILED: {self.non_2xx} non-2xx, {self.socket_errors} socket errors"
        return text + ("" if self.stored_ok else "  ** STORED ≠ ACKNOWLEDGED **")

    def row(self) -> dict[str, Any]:
        return {
            "rps": round(self.rps, 1),
            "requests": self.requests,
            "seconds": self.seconds,
            "non_2xx": self.non_2xx,
            "socket_errors": self.socket_errors,
            "cpu_ms_per_request": round(self.ms(), 4),
            "cpu_ms_per_request_without_db": round(self.ms(with_db=False), 4),
            "app_cpu_per_s": round(self.app_s / self.seconds, 3),
            "db_cpu_per_s": round(self.db_s / self.seconds, 3),
            "cpu0_others_per_s": round(self.cpu0_others_s / self.seconds, 3),
            "events_stored": self.stored if self.kind == "webhook" else None,
            "distinct_acknowledged": list(self.acknowledged) if self.kind == "webhook" else None,
            "stored_ok": self.stored_ok,
        }


def _tree_cpu(pid: int) -> dict[int, float]:
    return {p: cpu_seconds([p]) for p in (pid, *children(pid))}


def _spent(before: dict[int, float], after: dict[int, float]) -> float:
    return sum(max(0.0, seconds - before.get(pid, 0.0)) for pid, seconds in after.items())


def cpu0_busy() -> float:
    """Busy seconds of the servers' CPU so far (``/proc/stat``: user ... steal, less idle and
    iowait)."""
    for line in Path("/proc/stat").read_text().splitlines():
        if line.startswith(f"cpu{SERVER_CPU} "):
            fields = [int(f) for f in line.split()[1:9]]
            return (sum(fields) - fields[3] - fields[4]) / CLK_TCK
    return 0.0


def measure(target: Target, kind: str, pool: Pool, seconds: float) -> Sample:
    stored_before = target.stored() if kind == "webhook" else 0
    pg = target.postgres
    app_before, busy_before = _tree_cpu(target.server.pid), cpu0_busy()
    db_before = pg.cpu_by_pid() if pg else {}
    result = wrk.run(target.server.url, pool=pool.path, script=wrk.REQUESTS_LUA, duration_s=seconds)
    app_s = _spent(app_before, _tree_cpu(target.server.pid))
    db_s = _spent(db_before, pg.cpu_by_pid()) if pg else 0.0
    busy = cpu0_busy() - busy_before
    stored = 0
    if kind == "webhook":
        time.sleep(SETTLE_S)
        stored = target.stored() - stored_before
    distinct = pool.distinct(result.requests)
    return Sample(
        label=target.label,
        kind=kind,
        rps=result.rps,
        requests=result.requests,
        seconds=seconds,
        non_2xx=result.non_2xx,
        socket_errors=result.socket_errors,
        app_s=app_s,
        db_s=db_s,
        cpu0_others_s=max(0.0, busy - app_s - db_s),
        stored=stored,
        acknowledged=(
            max(0, distinct - wrk.CONNECTIONS),
            pool.distinct(result.requests + wrk.CONNECTIONS),
        ),
    )
