"""What holds the event loop (issue 35: a flat tail): the collector kept out of the way once the
node has started (``quiet_collector``), and, when the operator asks (``EDGE_LONG_STEP_MS``),
the collector's pauses and every task step that kept the loop's thread busy longer than that.

Both are measured in the loop thread's own CPU time (``time.thread_time``), not the clock on
the wall: on a shared machine a step the kernel preempted is not the node's doing, and a
step that computed for 5 ms is, however the machine is loaded. A long step is logged with
its task's name and where it stopped (at most once a minute per task name) and counted in
``edge_loop_long_steps``. Both cost the hot path (two clock reads a step, a Python call each
collection: 3 % of a webhook's CPU for the collector's alone), so they are off unless asked.
"""

from __future__ import annotations

import gc
import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import trio

log = logging.getLogger("edge.loop")

_TOLD_EVERY_S = 60.0

# A young-generation pass finds almost no garbage here: a request's objects are freed by their
# reference counts (under one object in a cycle per webhook, measured), so a pass only walks
# what the requests in flight still hold. At CPython's 700 the count crossed it every 20
# webhooks at peak: 2,000 passes, their older-generation passes and 0.9 s of CPU in 40,000
# webhooks. At 5,000, 36 passes and 75 ms, and no full collection.
YOUNG_THRESHOLD = 5_000


def quiet_collector() -> None:
    """Once the node has started: what start-up made lives as long as the node, out of the
    collector's sight (a full pass walks only what requests made), and the young generation
    collected after 5,000 new objects instead of 700."""
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, middle, old)


class LongSteps(trio.abc.Instrument):
    """Tells ``on_long(task name, CPU seconds)`` of each task step over ``threshold_s``."""

    def __init__(self, threshold_s: float, on_long: Callable[[str, float], None]) -> None:
        self.threshold_s = threshold_s
        self._on_long = on_long
        self._began = 0.0
        self._stepping: trio.lowlevel.Task | None = None
        self._told: dict[str, float] = {}

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        self._stepping = task
        self._began = time.thread_time()

    def after_task_step(self, task: trio.lowlevel.Task) -> None:
        if task is not self._stepping:  # the step that added this instrument: begun unseen
            return
        spent = time.thread_time() - self._began
        if spent <= self.threshold_s:
            return
        self._on_long(task.name, spent)
        now = time.monotonic()
        if now - self._told.get(task.name, -_TOLD_EVERY_S) >= _TOLD_EVERY_S:
            self._told[task.name] = now
            log.warning(
                "a step of %s held the loop for %.1f ms of CPU (stopped at %s)",
                task.name,
                spent * 1000,
                _where(task),
            )


def _where(task: trio.lowlevel.Task) -> str:
    """The innermost frame outside trio the task is suspended in: the await it reached."""
    frames = [f for f, _ in task.iter_await_frames() if "/trio/" not in f.f_code.co_filename]
    if not frames:
        return "?"
    frame = frames[-1]
    return f"{frame.f_code.co_filename.rsplit('/', 1)[-1]}:{frame.f_lineno} {frame.f_code.co_name}"


class GcPauses:
    """Tells ``on_pause(generation, CPU seconds)`` of each collection the loop thread ran."""

    def __init__(self, on_pause: Callable[[int, float], None]) -> None:
        self._on_pause = on_pause
        self._began = 0.0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._began = time.thread_time()
        else:
            self._on_pause(int(info["generation"]), time.thread_time() - self._began)


@contextmanager
def watched(
    long_step_s: float | None,
    on_long: Callable[[str, float], None],
    on_pause: Callable[[int, float], None],
) -> Iterator[None]:
    """Count the collector's pauses and long steps while in, when ``long_step_s`` is set."""
    if not long_step_s:
        yield
        return
    pauses = GcPauses(on_pause)
    steps = LongSteps(long_step_s, on_long)
    gc.callbacks.append(pauses)
    trio.lowlevel.add_instrument(steps)
    try:
        yield
    finally:
        gc.callbacks.remove(pauses)
        trio.lowlevel.remove_instrument(steps)
