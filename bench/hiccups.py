"""The machine's own stalls: how long a CPU is taken from a process that wants it all.

A loop that only reads the clock on one CPU sees every moment it was not run (the hypervisor
running another guest, an interrupt storm, a host's own work) as a gap between two readings.
On the KVM guest this bench runs on, such a loop lost 1 to 5 % of its time in gaps of up to
29 ms, with no steal time accounted in ``/proc/stat``: a server's p99 cannot be under what the
machine takes from it, whatever the server does, so the absolute latency targets are judged
against it (``bench.run``).

``delay_quantile`` turns the gaps into the delay a request arriving at a random moment would
wait for its CPU to come back: inside a gap of g seconds, an arrival waits what is left of it
(uniform from 0 to g), so P(wait > x) = sum of max(0, g - x) over the gaps, divided by the time
watched.

Run: ``python -m bench.hiccups SECONDS CPU [CPU ...]`` prints one JSON object a CPU, watched at
once.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Sequence
from multiprocessing import Pool

GAP_S = 0.0002  # shorter gaps are the loop's own cost and the clock's: not counted


def watch(seconds: float, gap_s: float = GAP_S) -> tuple[list[float], float]:
    """The gaps over ``gap_s`` a clock-reading loop on this CPU sees in about ``seconds``,
    and the time it watched (the last gap may run past ``seconds``)."""
    clock = time.perf_counter
    began = last = clock()
    end = began + seconds
    gaps = []
    while last < end:
        now = clock()
        if now - last > gap_s:
            gaps.append(now - last)
        last = now
    return gaps, last - began


def delay_quantile(gaps: Sequence[float], watched_s: float, q: float) -> float:
    """The wait ``x`` that a fraction ``1 - q`` of random arrivals exceed (0 when the gaps
    hold less than that fraction of the time)."""
    tail = (1 - q) * watched_s  # the time, summed over gaps, spent waiting longer than x
    ordered = sorted(gaps, reverse=True)
    # sum(max(0, g - x)) falls as x grows: find x where it equals ``tail``, gap by gap
    above = 0.0
    for n, gap in enumerate(ordered, start=1):
        above += gap
        following = ordered[n] if n < len(ordered) else 0.0
        # with x between ``following`` and ``gap``, the first n gaps count: above - n * x
        if above - n * following >= tail:
            return max(0.0, (above - tail) / n)
    return 0.0


def summary(gaps: Sequence[float], watched_s: float) -> dict[str, float]:
    return {
        "lost_pct": round(100 * sum(gaps) / watched_s, 2),
        "gaps_over_1ms_a_s": round(sum(1 for g in gaps if g > 0.001) / watched_s, 1),
        "max_ms": round(max(gaps, default=0.0) * 1e3, 2),
        "p99_delay_ms": round(delay_quantile(gaps, watched_s, 0.99) * 1e3, 2),
        "p999_delay_ms": round(delay_quantile(gaps, watched_s, 0.999) * 1e3, 2),
    }


def _on_cpu(args: tuple[int, float]) -> dict[str, float]:
    cpu, seconds = args
    os.sched_setaffinity(0, {cpu})
    return {"cpu": cpu, **summary(*watch(seconds))}


def machine_stalls(seconds: float, cpus: Sequence[int]) -> list[dict[str, float]]:
    """Each CPU's stalls, watched at the same time (one process a CPU)."""
    with Pool(len(cpus)) as pool:
        return pool.map(_on_cpu, [(cpu, seconds) for cpu in cpus])


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    seconds, cpus = float(args[0]), [int(c) for c in args[1:]] or [0]
    for row in machine_stalls(seconds, cpus):
        print(json.dumps(row))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
