"""An open-loop load generator (the wrk2 idea; wrk2 is not packaged in Debian).

Request ``i`` is due at ``start + i / rate``, whatever happened to earlier ones, and its latency
is measured from that due time, not from when it was sent: when the server falls behind, the
requests queued behind slow answers count their wait (no coordinated omission). At most
``connections`` requests are in flight, on keep-alive HTTP/1.1 connections; a request whose
connection is still busy at its due time is sent late and its lateness is part of its latency.
Bounded in count (rate x duration) and time (a per-request timeout).

Run: ``python -m bench.loadgen URL PATH --rate R --duration S --connections C
[--header 'Name: value'] [--pool FILE | --requests FILE]`` prints one JSON object: sent, ok,
errors, achieved rate, and p50/p90/p99/p99.9/max latency in ms. With ``--pool`` each request
POSTs the next delivery of a webhook pool file (see ``bench.events``) to PATH; with
``--requests`` each is the next line of a ``requests.lua`` pool (its own method, path, body and
headers: many projects' paths, as ``bench.cluster`` writes them); with neither each is a GET of
PATH. ``open_loop`` runs it from another bench in a process of its own.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import gc
import json
import math
import select
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from bench.events import read_pool

TIMEOUT_S = 10.0


def percentile(sorted_values: list[float], q: float) -> float:
    if not sorted_values:
        return math.nan
    index = min(len(sorted_values) - 1, max(0, math.ceil(q * len(sorted_values)) - 1))
    return sorted_values[index]


class OpenLoop:
    """The generator's loop: plain sockets and one epoll, no event loop framework. An asyncio
    version measured its own floor at p99 4.2 ms against a server that answers in 11 us (its
    sleeps end on the millisecond after they are due, and its tasks queue behind each other),
    above the 2 ms the node's status reads are held to; this one waits in the kernel only until a
    millisecond before the next request is due and spins from there, so a request goes out within
    microseconds of its due time and an answer is seen as it lands.

    A connection the server ends (``Connection: close`` after its keep-alive allowance, an end
    of file, an unreadable answer) is replaced by a new one, as wrk does; a request lost with it
    or unanswered ``TIMEOUT_S`` after it was sent is an error, and counts in the percentiles as
    never answered (infinite), so a run that lost more than one request in a hundred shows an
    infinite p99 rather than a flattering one."""

    def __init__(
        self, url: str, requests: list[bytes], rate: float, duration_s: float, connections: int
    ) -> None:
        parts = urlsplit(url)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        self.requests = requests
        self.rate = rate
        self.count = int(rate * duration_s)
        self.connections = connections
        self.latencies: list[float] = []
        self.errors = 0
        self.statuses: dict[int, int] = {}
        self._poller = select.epoll()
        self._by_fd: dict[int, _Connection] = {}
        self._idle: collections.deque[_Connection] = collections.deque()
        self._busy: dict[int, _Connection] = {}

    def run(self) -> dict[str, float]:
        for _ in range(self.connections):
            self._open()
        clock = time.perf_counter
        start = clock() + 0.05
        sent = 0
        next_check = start
        gc_was = gc.isenabled()
        gc.disable()  # a collection would stall the generator, not the server
        try:
            while sent < self.count or self._busy:
                now = clock()
                while sent < self.count and self._idle and start + sent / self.rate <= now:
                    conn = self._idle.popleft()
                    conn.due = start + sent / self.rate
                    self._busy[conn.fd] = conn
                    sent += 1
                    try:
                        conn.sock.sendall(self.requests[(sent - 1) % len(self.requests)])
                    except OSError:
                        self._replace(conn)  # the request is lost with it
                        continue
                    conn.sent_at = clock()
                if not self._idle and not self._busy:
                    break  # no connection can be had: what is left is never sent
                # with every connection busy, nothing can go out before an answer comes
                wait = (
                    start + sent / self.rate - clock() if sent < self.count and self._idle else 0.05
                )
                # epoll's timeout is whole milliseconds, rounded up: wake one early, then spin
                timeout = (math.floor((wait - 0.001) * 1000) - 0.5) / 1000 if wait > 0.002 else 0
                for fd, _ in self._poller.poll(max(timeout, 0)):
                    ready = self._by_fd.get(fd)
                    if ready is not None:
                        self._read(ready, clock)
                now = clock()
                if now >= next_check:
                    next_check = now + 0.1
                    for conn in [c for c in self._busy.values() if now - c.sent_at > TIMEOUT_S]:
                        self._replace(conn)
        finally:
            if gc_was:
                gc.enable()
            self._poller.close()
            for conn in self._by_fd.values():
                conn.sock.close()
        unsent = self.count - sent
        self.errors += unsent
        self.latencies += [math.inf] * unsent
        elapsed = clock() - start
        done = sorted(self.latencies)
        return {
            "rate": self.rate,
            "sent": sent,
            "ok": self.statuses.get(200, 0),
            "errors": self.errors + sum(n for status, n in self.statuses.items() if status != 200),
            "achieved_rps": round(sum(1 for x in done if x < math.inf) / elapsed, 1),
            **{
                f"{name}_ms": round(percentile(done, q) * 1e3, 2)
                for name, q in (
                    ("p50", 0.5),
                    ("p90", 0.9),
                    ("p99", 0.99),
                    ("p999", 0.999),
                    ("max", 1.0),
                )
            },
        }

    def _read(self, conn: _Connection, clock: Callable[[], float]) -> None:
        try:
            if not conn.receive():
                raise ConnectionError("closed by the server")
            answer = conn.answer()
            if answer is None:
                return  # not all here yet
            if conn.fd not in self._busy:
                raise ConnectionError("an answer to no request")
        except (OSError, ValueError, IndexError):
            self._replace(conn)
            return
        status, closing = answer
        self.latencies.append(clock() - conn.due)
        self.statuses[status] = self.statuses.get(status, 0) + 1
        del self._busy[conn.fd]
        if closing or conn.buffer:
            self._replace(conn, lost=False)  # the server ends it: a new one takes its place
        else:
            self._idle.append(conn)

    def _open(self) -> None:
        try:
            conn = _Connection(self.host, self.port)
        except OSError:
            return  # one fewer connection; none at all ends the run
        self._poller.register(conn.fd, select.EPOLLIN)
        self._by_fd[conn.fd] = conn
        self._idle.append(conn)

    def _replace(self, conn: _Connection, lost: bool = True) -> None:
        """``conn`` is closed and a new one opened in its place; the request it carried, if
        any and ``lost``, is an error."""
        if self._busy.pop(conn.fd, None) is not None and lost:
            self.errors += 1
            self.latencies.append(math.inf)
        if conn in self._idle:
            self._idle.remove(conn)
        if self._by_fd.pop(conn.fd, None) is not None:
            self._poller.unregister(conn.fd)
        conn.sock.close()
        self._open()


class _Connection:
    """A keep-alive connection with at most one request in flight."""

    def __init__(self, host: str, port: int) -> None:
        self.sock = socket.create_connection((host, port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.fd = self.sock.fileno()
        self.buffer = b""
        self.due = 0.0  # the request in flight: when it was due, and when it went out
        self.sent_at = 0.0

    def receive(self) -> bool:
        """What has arrived (the poll said so: the read does not wait); False when it closed."""
        data = self.sock.recv(65536)
        self.buffer += data
        return bool(data)

    def answer(self) -> tuple[int, bool] | None:
        """The status of a whole answer at the buffer's head, taken off it, and whether the
        server ends the connection after it; None until one is whole (the servers here always
        send a length: an answer without one is unreadable, ``ValueError``)."""
        end = self.buffer.find(b"\r\n\r\n")
        if end < 0:
            return None
        status, length, closing = read_head(self.buffer[:end])
        if length is None:
            raise ValueError("an answer without a length")
        if len(self.buffer) < end + 4 + length:
            return None
        self.buffer = self.buffer[end + 4 + length :]
        return status, closing


def read_head(head: bytes) -> tuple[int, int | None, bool]:
    """An answer's status line and headers: its status, its Content-Length (None when it
    gives none) and whether the server ends the connection after it."""
    lines = head.split(b"\r\n")
    length: int | None = None
    closing = False
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        name = name.strip().lower()
        if name == b"content-length":
            length = int(value)
        elif name == b"connection":
            closing = b"close" in value.lower()
    return int(lines[0].split(b" ", 2)[1]), length, closing


async def read_response(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    """The status and body of one HTTP/1.1 answer (the servers here always send a length)."""
    status, length, _ = read_head((await reader.readuntil(b"\r\n\r\n"))[:-4])
    return status, await reader.readexactly(length) if length else b""


async def each_once(
    url: str, requests: list[bytes], connections: int = 64
) -> list[tuple[int, bytes]]:
    """Send every request once as fast as the server answers (closed loop, for setup work:
    httpx manages only a few hundred requests a second here); answers in request order."""
    parts = urlsplit(url)
    answers: list[tuple[int, bytes]] = [(0, b"")] * len(requests)
    pending = iter(range(len(requests)))

    async def worker() -> None:
        reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
        for index in pending:
            writer.write(requests[index])
            answers[index] = await asyncio.wait_for(read_response(reader), TIMEOUT_S)
        writer.close()

    await asyncio.gather(*(worker() for _ in range(min(connections, len(requests)))))
    return answers


def http_request(
    url: str, method: str, path: str, headers: dict[str, str] | None = None, body: bytes = b""
) -> bytes:
    """The bytes of one keep-alive HTTP/1.1 request."""
    lines = [f"{method} {path} HTTP/1.1", f"Host: {urlsplit(url).netloc}"]
    lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
    if body or method == "POST":
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def build_requests(url: str, path: str, headers: list[str], pool: Path | None) -> list[bytes]:
    common = dict(h.split(": ", 1) for h in headers)
    if pool is None:
        return [http_request(url, "GET", path, common)]
    return [
        http_request(
            url,
            "POST",
            path,
            {**common, "Content-Type": "application/json", "Stripe-Signature": signature},
            body,
        )
        for signature, body in read_pool(pool)
    ]


def read_requests(url: str, path: Path) -> list[bytes]:
    """The requests of a ``requests.lua`` pool file: a line each, tab-separated METHOD, PATH,
    BODY (empty for none), then "Name: value" headers."""
    requests = []
    with open(path, "rb") as lines:
        for line in lines:
            method, target, body, *headers = line.rstrip(b"\n").decode().split("\t")
            named = dict(h.split(": ", 1) for h in headers)
            if body:
                named["Content-Type"] = "application/json"
            requests.append(http_request(url, method, target, named, body.encode()))
    return requests


def open_loop(
    url: str,
    path: str,
    rate: float,
    duration_s: float,
    *,
    connections: int,
    headers: Sequence[str] = (),
    pool: Path | None = None,
    requests: Path | None = None,
) -> dict[str, Any]:
    """A run of this generator in a process of its own (its CPU is not the caller's); its
    figures."""
    argv = [sys.executable, "-m", "bench.loadgen", url, path, "--rate", f"{rate:.1f}"]
    argv += ["--duration", str(duration_s), "--connections", str(connections)]
    for header in headers:
        argv += ["--header", header]
    if pool is not None:
        argv += ["--pool", str(pool)]
    if requests is not None:
        argv += ["--requests", str(requests)]
    out = subprocess.run(
        argv, capture_output=True, text=True, timeout=duration_s + 120, check=True
    ).stdout
    return dict(json.loads(out))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("url")
    parser.add_argument("path")
    parser.add_argument("--rate", type=float, required=True)
    parser.add_argument("--duration", type=float, required=True)
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--header", action="append", default=[])
    parser.add_argument("--pool", type=Path)
    parser.add_argument("--requests", type=Path)
    args = parser.parse_args()
    if args.requests is not None:
        requests = read_requests(args.url, args.requests)
    else:
        requests = build_requests(args.url, args.path, args.header, args.pool)
    result = OpenLoop(args.url, requests, args.rate, args.duration, args.connections).run()
    print(json.dumps(result))


if __name__ == "__main__":
    main()
