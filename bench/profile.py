"""Profile evidence for a missed target: ``py-spy record`` of a server under load, summarised
as the functions where samples end (self time) and the node's own functions by inclusive time.
The raw collapsed stacks are kept next to the results for a flame graph."""

from __future__ import annotations

import collections
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

PY_SPY = Path(sys.executable).parent / "py-spy"
_FRAME = re.compile(r"^(?P<func>.*) \((?P<file>[^()]*?)(?::\d+)?\)$")


def available() -> bool:
    return PY_SPY.exists()


def record(
    pid: int, out: Path, load: Callable[[], object], duration_s: int = 8, rate: int = 100
) -> dict[str, object]:
    """Sample ``pid`` for ``duration_s`` while ``load()`` runs; return the summary."""
    spy = subprocess.Popen(
        [
            str(PY_SPY),
            "record",
            "-p",
            str(pid),
            "-d",
            str(duration_s),
            "-r",
            str(rate),
            "-f",
            "raw",
            "-o",
            str(out),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    load()
    spy.wait(timeout=duration_s + 60)
    return summarise(out)


def summarise(path: Path, top: int = 12) -> dict[str, object]:
    """Shares of the event-loop thread's samples (the thread every request goes through; an
    idle worker thread waiting for work is sampled too, so other threads are counted apart)."""
    self_time: collections.Counter[str] = collections.Counter()
    inclusive: collections.Counter[str] = collections.Counter()
    package: collections.Counter[str] = collections.Counter()
    total = worker_busy = 0
    for line in path.read_text().splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not count_text.isdigit():
            continue
        count = int(count_text)
        frames = [_name(frame) for frame in stack.split(";")]
        if not any(frame.endswith(":unrolled_run") for frame in frames):
            if any(frame.startswith("edge/") for frame in frames):
                worker_busy += count  # a commit in the writer's worker thread
            continue
        total += count
        self_time[frames[-1]] += count
        package[frames[-1].split("/", 1)[0].split(":", 1)[0] or "?"] += count
        for frame in dict.fromkeys(
            f
            for f in frames
            if f.startswith("edge/") and "edge/cli.py" not in f and "__main__" not in f
        ):
            inclusive[frame] += count
    share = lambda n: round(100 * n / total, 1) if total else 0.0  # noqa: E731
    return {
        "loop_samples": total,
        "writer_thread_samples": worker_busy,
        "self_pct_by_package": [(name, share(n)) for name, n in package.most_common(top)],
        "self_pct": [(name, share(n)) for name, n in self_time.most_common(top)],
        "edge_inclusive_pct": [(name, share(n)) for name, n in inclusive.most_common(top)],
        "raw": str(path),
    }


def _name(frame: str) -> str:
    match = _FRAME.match(frame.strip())
    if match is None:
        return frame.strip()
    file = match["file"]
    for marker in ("site-packages/", "/lib/python3.11/", "/work/main/"):
        if marker in file:
            file = file.split(marker, 1)[1]
    return f"{file}:{match['func']}"
