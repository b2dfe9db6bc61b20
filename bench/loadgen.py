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
from collections.abc import Sequence
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
    microseconds of its due time and an answer is seen as it lands."""

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

    def run(self) -> dict[str, float]:
        conns = [_Connection(self.host, self.port) for _ in range(self.connections)]
        poller = select.epoll()
        by_fd = {}
        for conn in conns:
            poller.register(conn.sock.fileno(), select.EPOLLIN)
            by_fd[conn.sock.fileno()] = conn
        idle = collections.deque(conns)
        busy: dict[int, _Connection] = {}
        clock = time.perf_counter
        start = clock() + 0.05
        sent = 0
        next_check = start
        gc_was = gc.isenabled()
        gc.disable()  # a collection would stall the generator, not the server
        try:
            while sent < self.count or busy:
                now = clock()
                while sent < self.count and idle and start + sent / self.rate <= now:
                    conn = idle.popleft()
                    conn.due = start + sent / self.rate
                    try:
                        conn.sock.sendall(self.requests[sent % len(self.requests)])
                    except OSError:
                        self._lose(conn, poller, by_fd)
                        sent += 1
                        continue
                    busy[conn.sock.fileno()] = conn
                    sent += 1
                # with every connection busy, nothing can go out before an answer comes
                wait = start + sent / self.rate - clock() if sent < self.count and idle else 0.05
                # epoll's timeout is whole milliseconds, rounded up: wake one early, then spin
                timeout = math.floor((wait - 0.001) * 1000) / 1000 if wait > 0.002 else 0
                for fd, _ in poller.poll(timeout):
                    conn = by_fd[fd]
                    if not conn.receive():
                        busy.pop(fd, None)
                        self._lose(conn, poller, by_fd)
                        continue
                    status = conn.answer()
                    if status is not None:
                        self.latencies.append(clock() - conn.due)
                        self.statuses[status] = self.statuses.get(status, 0) + 1
                        del busy[fd]
                        idle.append(conn)
                now = clock()
                if now >= next_check:
                    next_check = now + 0.1
                    for fd, conn in list(busy.items()):
                        if now - conn.due > TIMEOUT_S:
                            del busy[fd]
                            self._lose(conn, poller, by_fd)
                if not idle and not busy and sent < self.count:
                    self.errors += self.count - sent  # every connection is gone
                    break
        finally:
            if gc_was:
                gc.enable()
            poller.close()
            for conn in conns:
                conn.sock.close()
        elapsed = clock() - start
        done = sorted(self.latencies)
        return {
            "rate": self.rate,
            "sent": sent,
            "ok": self.statuses.get(200, 0),
            "errors": self.errors + sum(n for status, n in self.statuses.items() if status != 200),
            "achieved_rps": round(len(done) / elapsed, 1),
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

    def _lose(self, conn: _Connection, poller: select.epoll, by_fd: dict[int, _Connection]) -> None:
        """A connection that failed or timed out: counted once, and the others carry on."""
        self.errors += 1
        fd = conn.sock.fileno()
        if by_fd.pop(fd, None) is not None:
            poller.unregister(fd)


class _Connection:
    """A keep-alive connection with at most one request in flight."""

    def __init__(self, host: str, port: int) -> None:
        self.sock = socket.create_connection((host, port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buffer = b""
        self.due = 0.0

    def receive(self) -> bool:
        """What has arrived (the poll said so: the read does not wait); False when it closed."""
        try:
            data = self.sock.recv(65536)
        except OSError:
            return False
        self.buffer += data
        return bool(data)

    def answer(self) -> int | None:
        """The status of a whole answer at the buffer's head, taken off it; None until one is
        whole (the servers here always send a length)."""
        end = self.buffer.find(b"\r\n\r\n")
        if end < 0:
            return None
        lines = self.buffer[:end].split(b"\r\n")
        length = 0
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        if len(self.buffer) < end + 4 + length:
            return None
        self.buffer = self.buffer[end + 4 + length :]
        return int(lines[0].split(b" ", 2)[1])


async def read_response(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    """The status and body of one HTTP/1.1 answer (the servers here always send a length)."""
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    status = int(lines[0].split(b" ", 2)[1])
    length = 0
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
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
