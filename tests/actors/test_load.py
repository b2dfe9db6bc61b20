"""The node's load as background work sees it (edge.actors.context.Load): a rate of requests
begun, so a burst counts and parked long polls do not."""

from __future__ import annotations

from edge.actors.context import Load


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_burst_is_busy_and_an_idle_stretch_is_not():
    clock = Clock()
    load = Load(clock)
    for _ in range(Load.BUSY - 1):
        load.begun()
    assert not load.busy()
    load.begun()
    assert load.busy()
    clock.now += Load.WINDOW_S  # the next window remembers the last one
    assert load.busy()
    clock.now += 3 * Load.WINDOW_S  # quiet since: nothing left of the burst
    assert not load.busy()


def test_a_steady_trickle_is_not_busy():
    clock = Clock()
    load = Load(clock)
    for _ in range(100):  # 100 requests a second, for a second
        load.begun()
        clock.now += 0.01
    assert not load.busy()
