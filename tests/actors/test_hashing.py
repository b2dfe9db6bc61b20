"""The bounded hashing pool: at most ``workers`` calls at once, at most ``waiting`` more queued,
``429 rate_limited`` with ``Retry-After`` past both; results and errors come back to the caller,
and a caller cancelled while it waits never has its call made."""

from __future__ import annotations

import threading

import pytest
import trio
import trio.testing
from support.waits import until_notified

from edge.actors.hashing import HashingPool
from edge.errors import RateLimited


@pytest.fixture
def pool():
    opened = HashingPool(workers=2, waiting=3)
    yield opened
    opened.close()


class Gate:
    """A blocking call that records how many run at once, and holds them until ``release``."""

    def __init__(self) -> None:
        self.changed = threading.Condition()
        self.running = self.most = self.calls = 0
        self.open = threading.Event()

    def call(self, value: int) -> int:
        with self.changed:
            self.calls += 1
            self.running += 1
            self.most = max(self.most, self.running)
            self.changed.notify_all()
        self.open.wait(10)
        with self.changed:
            self.running -= 1
            self.changed.notify_all()
        return value * 2

    async def reached(self, running: int) -> None:
        """Until ``running`` calls are inside ``call`` (the pool's threads start them on their
        own time, and say so)."""
        await until_notified(
            self.changed, lambda: self.running >= running, what=f"{running} calls running"
        )


async def test_at_most_workers_run_and_the_queue_is_bounded(pool):
    gate = Gate()
    results: list[int] = []

    async def caller(value: int) -> None:
        results.append(await pool.run(gate.call, value))

    async with trio.open_nursery() as nursery:
        for value in range(5):  # 2 run, 3 wait
            nursery.start_soon(caller, value)
        await gate.reached(2)
        await trio.testing.wait_all_tasks_blocked()
        assert pool.admitted == 5
        with pytest.raises(RateLimited) as refused:
            await pool.run(gate.call, 99)
        assert refused.value.code == "rate_limited" and refused.value.retryable
        assert int(refused.value.headers["Retry-After"]) >= 1
        gate.open.set()
    assert sorted(results) == [0, 2, 4, 6, 8]
    assert gate.most == 2 and gate.calls == 5  # the refused call was never made
    assert pool.admitted == 0


async def test_an_error_reaches_the_caller_and_the_pool_goes_on(pool):
    def fails() -> None:
        raise ValueError("bad hash")

    with pytest.raises(ValueError, match="bad hash"):
        await pool.run(fails)
    assert await pool.run(lambda: 7) == 7


async def test_a_caller_cancelled_while_waiting_is_never_run(pool):
    gate = Gate()
    async with trio.open_nursery() as nursery:
        for value in range(2):
            nursery.start_soon(pool.run, gate.call, value)
        await trio.testing.wait_all_tasks_blocked()
        with trio.move_on_after(0.05):
            await pool.run(gate.call, 3)  # waits for a turn, then gives up
        assert pool.admitted == 2
        gate.open.set()
    assert gate.calls == 2


async def test_the_work_runs_on_the_pools_own_threads(pool):
    names = {await pool.run(lambda: threading.current_thread().name) for _ in range(20)}
    assert names <= {"edge-hashing-0", "edge-hashing-1"}
