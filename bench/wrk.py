"""Closed-loop peak runs with ``wrk`` (one thread, on the load CPU), bounded by duration."""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

LUA = Path(__file__).resolve().parent / "webhook.lua"
# any request, each with its own path and headers (bench.cluster: many projects in one run)
REQUESTS_LUA = Path(__file__).resolve().parent / "requests.lua"
THREADS = 1
CONNECTIONS = 64
DURATION_S = 5
_UNITS = {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 60e3}


@dataclass
class WrkResult:
    requests: int
    rps: float
    non_2xx: int
    socket_errors: int
    p50_ms: float
    p99_ms: float


def run(
    url: str,
    *,
    headers: dict[str, str] | None = None,
    pool: Path | None = None,
    script: Path = LUA,
    connections: int = CONNECTIONS,
    duration_s: float = DURATION_S,
) -> WrkResult:
    argv = [
        "wrk",
        f"-t{THREADS}",
        f"-c{connections}",
        f"-d{round(duration_s)}s",
        "--timeout",
        "10s",
        "--latency",
    ]
    for name, value in (headers or {}).items():
        argv += ["-H", f"{name}: {value}"]
    if pool is not None:
        argv += ["-s", str(script)]
    argv.append(url)
    if pool is not None:
        argv += ["--", str(pool)]
    out = subprocess.run(
        argv, capture_output=True, text=True, timeout=duration_s + 60, check=True
    ).stdout
    return parse(out)


def parse(out: str) -> WrkResult:
    def number(pattern: str, default: float | None = None) -> float:
        match = re.search(pattern, out)
        if match is None:
            if default is None:
                raise RuntimeError(f"wrk output without {pattern!r}:\n{out}")
            return default
        return float(match.group(1))

    errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    return WrkResult(
        requests=int(number(r"(\d+) requests in")),
        rps=number(r"Requests/sec:\s+([\d.]+)"),
        non_2xx=int(number(r"Non-2xx or 3xx responses: (\d+)", 0)),
        socket_errors=sum(int(g) for g in errors.groups()) if errors else 0,
        p50_ms=_latency(out, "50%"),
        p99_ms=_latency(out, "99%"),
    )


def _latency(out: str, label: str) -> float:
    match = re.search(rf"^\s+{label}\s+([\d.]+)(us|ms|s|m)\s*$", out, re.M)
    return float(match.group(1)) * _UNITS[match.group(2)] if match else float("nan")
