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
import json
import math
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
        self._next = 0
        self._start = 0.0

    async def run(self) -> dict[str, float]:
        streams = [
            await asyncio.open_connection(self.host, self.port) for _ in range(self.connections)
        ]
        self._start = time.perf_counter() + 0.05
        await asyncio.gather(*(self._worker(reader, writer) for reader, writer in streams))
        elapsed = time.perf_counter() - self._start
        for _, writer in streams:
            writer.close()
        done = sorted(self.latencies)
        return {
            "rate": self.rate,
            "sent": self._next,
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

    async def _worker(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while self._next < self.count:
            index = self._next
            self._next += 1
            due = self._start + index / self.rate
            delay = due - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            writer.write(self.requests[index % len(self.requests)])
            try:
                status, _ = await asyncio.wait_for(read_response(reader), TIMEOUT_S)
            except (TimeoutError, asyncio.IncompleteReadError, ConnectionError, ValueError):
                self.errors += 1
                return  # this connection is unusable; the others carry on
            self.latencies.append(time.perf_counter() - due)
            self.statuses[status] = self.statuses.get(status, 0) + 1


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
    result = asyncio.run(
        OpenLoop(args.url, requests, args.rate, args.duration, args.connections).run()
    )
    print(json.dumps(result))


if __name__ == "__main__":
    main()
