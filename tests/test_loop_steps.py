"""What holds the loop (edge.loop_steps): a step that computes past the threshold is told with
its task's name, a short one is not, and each collection of the collector is told with its
generation; both in the loop thread's CPU time, and nothing at all with no threshold."""

from __future__ import annotations

import gc
import time

import trio

from edge.loop_steps import YOUNG_THRESHOLD, quiet_collector, watched


def compute(seconds: float) -> None:
    """Keep the thread busy for ``seconds`` of its own CPU time."""
    began = time.thread_time()
    while time.thread_time() - began < seconds:
        pass


async def test_a_long_step_is_told_with_its_task_and_a_short_one_is_not():
    long: list[tuple[str, float]] = []

    async def busy() -> None:
        await trio.lowlevel.checkpoint()
        compute(0.02)
        await trio.lowlevel.checkpoint()

    async def quick() -> None:
        for _ in range(50):
            await trio.lowlevel.checkpoint()

    with watched(0.01, lambda task, spent: long.append((task, spent)), lambda *_: None):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(busy, name="busy")
            nursery.start_soon(quick, name="quick")
    assert [task for task, _ in long] == ["busy"]
    assert long[0][1] >= 0.02


async def test_collections_are_told_while_watched_and_nothing_without_a_threshold():
    pauses: list[tuple[int, float]] = []
    with watched(1.0, lambda *_: None, lambda g, s: pauses.append((g, s))):
        gc.collect()
    assert len(pauses) == 1 and pauses[0][0] == 2 and pauses[0][1] >= 0
    gc.collect()
    assert len(pauses) == 1  # told only while watched
    long: list[str] = []
    with watched(None, lambda task, _: long.append(task), lambda g, s: pauses.append((g, s))):
        compute(0.02)
        await trio.lowlevel.checkpoint()
        gc.collect()
    assert long == [] and len(pauses) == 1


def test_a_quiet_collector_leaves_a_burst_of_short_lived_objects_alone():
    """What requests in flight hold (a few thousand objects, freed by their reference counts)
    sets off no young-generation pass once the node has started; CPython's 700 would."""
    before = gc.get_threshold()
    passes: list[int] = []

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            passes.append(info["generation"])

    def burst() -> None:
        held = [[i] for i in range(3_000)]
        del held

    try:
        gc.set_threshold(700, 10, 10)  # CPython's default
        gc.collect()
        gc.callbacks.append(count)
        burst()
        assert passes, "the default threshold collects during such a burst"
        quiet_collector()
        gc.collect()
        passes.clear()
        burst()
        assert passes == []
        assert gc.get_threshold()[0] == YOUNG_THRESHOLD
        assert gc.get_freeze_count() > 0
    finally:
        gc.callbacks.remove(count)
        gc.unfreeze()
        gc.set_threshold(*before)
