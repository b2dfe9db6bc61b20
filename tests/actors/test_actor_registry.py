"""The registry's guarantees, with a small actor whose behaviour the test controls.

Time is a MockClock that jumps whenever every task waits, and the steps are ordered with
``wait_all_tasks_blocked``: nothing here sleeps for real."""

from __future__ import annotations

from functools import partial
from typing import Any

import pytest
import trio
from support.waits import bound
from trio.testing import wait_all_tasks_blocked

from edge.actors.registry import ActorRef, ActorRegistry, Overdue, _OneShot
from edge.errors import Conflict, ContractError, Internal, NotFound


class Counter:
    """Counts per project; ``"boom"`` crashes it; ``("wait", event)`` holds it busy."""

    loads: dict[str, int] = {}
    saved: dict[str, int] = {}  # plays the store: what a restarted actor loads

    def __init__(self, project_id: str, ref: ActorRef) -> None:
        Counter.loads[project_id] = Counter.loads.get(project_id, 0) + 1
        self.project_id = project_id
        self.ref = ref
        self.count = Counter.saved.get(project_id, 0)
        self.busy = False  # holds work that eviction would lose
        self.held: list[Any] = []  # replies of "hold" messages, never given

    def handle_now(self, message: Any, reply: Any) -> bool:
        if message == "hold":  # taken, its reply kept: a commit that never lands
            self.held.append(reply)
            return True
        if isinstance(message, tuple):
            return False  # ("wait", event) needs the mailbox and a task
        self._apply(message, reply)
        return True

    async def handle(self, message: Any, reply: Any) -> None:
        if isinstance(message, tuple) and message[0] == "wait":
            await message[1].wait()
            message = "inc"
        self._apply(message, reply)

    def _apply(self, message: Any, reply: Any) -> None:
        if message == "boom":
            raise RuntimeError("boom")
        if message == "refuse":
            raise Conflict("refused", "no")
        self.count += 1
        Counter.saved[self.project_id] = self.count
        reply(self.count)

    async def quiesce(self) -> None:
        pass

    def idle(self) -> bool:
        return not self.busy

    def release_waiters(self) -> None:
        pass


async def factory(project_id: str, ref: ActorRef) -> Counter:
    if project_id == "missing":
        raise NotFound("project_not_found", "none")
    return Counter(project_id, ref)


@pytest.fixture(autouse=True)
def fresh_counters():
    Counter.loads.clear()
    Counter.saved.clear()


async def test_spawns_on_first_use_and_keeps_order(autojump_clock):
    async with trio.open_nursery() as nursery:
        registry = ActorRegistry(factory, nursery, idle_s=60)
        assert [await registry.call("a", "inc") for _ in range(3)] == [1, 2, 3]
        assert "a" in registry and len(registry) == 1
        with pytest.raises(ContractError) as info:
            await registry.call("missing", "inc")
        assert info.value.code == "project_not_found"
        await registry.drain()


async def test_a_crash_restarts_that_actor_from_the_store_and_spares_the_others(autojump_clock):
    async with trio.open_nursery() as nursery:
        registry = ActorRegistry(factory, nursery, idle_s=60)
        await registry.call("a", "inc")
        await registry.call("b", "inc")
        with pytest.raises(ContractError) as info:
            await registry.call("a", "boom")
        assert (type(info.value), info.value.code) == (Internal, "internal")
        await wait_all_tasks_blocked()  # the rebuild runs in the actor's own task
        assert Counter.loads["a"] == 2  # rebuilt from "the store"
        assert await registry.call("a", "inc") == 2  # state reloaded, not lost
        assert await registry.call("b", "inc") == 2
        assert Counter.loads["b"] == 1  # never touched
        assert registry.restarts == 1
        with pytest.raises(ContractError) as refused:
            await registry.call("a", "refuse")
        assert refused.value.code == "refused" and registry.restarts == 1
        await registry.drain()


async def test_callers_arriving_while_a_slow_load_runs_share_its_one_actor(autojump_clock):
    # a load whose reads give way (PostgreSQL): every caller meanwhile waits for that load
    async def slow(project_id: str, ref: ActorRef) -> Counter:
        await trio.sleep(1)
        return await factory(project_id, ref)

    answers: list[int] = []
    async with trio.open_nursery() as nursery:
        registry = ActorRegistry(slow, nursery, idle_s=60)

        async def call(message: str) -> None:
            answers.append(await registry.call("a", message))

        async with trio.open_nursery() as callers:
            for _ in range(5):
                callers.start_soon(call, "inc")
        assert Counter.loads == {"a": 1} and sorted(answers) == [1, 2, 3, 4, 5]
        refused: list[str] = []

        async def missing() -> None:
            with pytest.raises(ContractError) as info:
                await registry.call("missing", "inc")
            refused.append(info.value.code)

        async with trio.open_nursery() as callers:  # a failed load leaves no actor behind
            for _ in range(2):
                callers.start_soon(missing)
        assert refused == ["project_not_found"] * 2 and "missing" not in registry
        await registry.drain()


async def test_idle_actors_are_evicted_and_come_back_on_demand(autojump_clock):
    async with trio.open_nursery() as nursery:
        registry = ActorRegistry(factory, nursery, idle_s=0.05)
        await registry.call("a", "inc")
        await trio.sleep(0.2)  # mock time, the subject: idle past idle_s and the sweep
        assert "a" not in registry
        assert await registry.call("a", "inc") == 2
        assert Counter.loads["a"] == 2
        await registry.drain()


async def test_a_full_mailbox_is_backpressure_then_503(autojump_clock):
    async with trio.open_nursery() as nursery:
        registry = ActorRegistry(factory, nursery, idle_s=60, mailbox_size=1)
        gate = trio.Event()
        results: list[Any] = []

        async def call(message: Any, timeout_s: float) -> None:
            try:
                results.append(await registry.call("a", message, timeout_s=timeout_s))
            except ContractError as failure:
                results.append(failure.code)

        async with trio.open_nursery() as callers:
            callers.start_soon(call, ("wait", gate), 5)  # the actor is busy with this
            await wait_all_tasks_blocked()
            callers.start_soon(call, "inc", 5)  # fills the one mailbox slot
            await wait_all_tasks_blocked()
            callers.start_soon(call, "inc", 0.1)  # waits for room, then gives up
            await trio.sleep(0.3)  # mock time, the subject: past the third caller's timeout
            assert results == ["unavailable"]
            gate.set()
        assert sorted(results, key=str) == [1, 2, "unavailable"]
        await registry.drain()


async def test_a_reply_that_never_comes_is_given_up_on_once_the_calls_time_is_past(
    autojump_clock,
):
    async with trio.open_nursery() as nursery:
        registry = ActorRegistry(factory, nursery, idle_s=60, call_timeout_s=2.0)
        began = trio.current_time()
        with pytest.raises(ContractError) as info:
            await registry.call("a", "hold")
        assert info.value.code == "unavailable" and info.value.retryable
        assert 2.0 <= trio.current_time() - began <= 2.2  # within a tick (a tenth) of its time
        registry._entries["a"].actor.held[0](99)  # a reply that comes after: nobody waits
        assert await registry.call("a", "inc") == 1  # replies that come are still taken
        await trio.sleep(1.0)  # mock time
        assert not registry._overdue._looking  # nothing awaited: nothing looks
        await registry.drain()


async def test_a_caller_still_waiting_as_the_registry_ends_is_answered(autojump_clock):
    said: list[bool] = []

    async def waits(overdue: Overdue) -> None:
        said.append(await overdue.wait(_OneShot(), 30.0))

    async with trio.open_nursery() as callers:
        async with trio.open_nursery() as registry_nursery:
            overdue = Overdue(registry_nursery, 1.0)
            callers.start_soon(waits, overdue)
            await wait_all_tasks_blocked()
            registry_nursery.cancel_scope.cancel()  # as open_registry ends: no actor will reply
        await wait_all_tasks_blocked()
        assert said == [False]  # given up on at once, not left waiting for good
    began = trio.current_time()
    assert await overdue.wait(_OneShot(), 2.0) is False  # its nursery closed: its own time
    assert trio.current_time() - began == pytest.approx(2.0)


async def test_drain_finishes_queued_work_and_refuses_new(autojump_clock):
    async with trio.open_nursery() as nursery:
        registry = ActorRegistry(factory, nursery, idle_s=60)
        gate = trio.Event()
        answers: list[Any] = []

        async def call(message: Any) -> None:
            answers.append(await registry.call("a", message))

        nursery.start_soon(call, ("wait", gate))
        await wait_all_tasks_blocked()
        nursery.start_soon(call, "inc")
        await wait_all_tasks_blocked()
        async with trio.open_nursery() as draining:
            draining.start_soon(registry.drain)
            await wait_all_tasks_blocked()
            with pytest.raises(ContractError) as info:
                await registry.call("a", "inc")
            assert info.value.code == "unavailable"
            gate.set()
        assert sorted(answers) == [1, 2]
        assert registry.running == 0


async def test_while_draining_started_work_finishes_and_no_actor_is_made(autojump_clock):
    async with trio.open_nursery() as nursery:
        registry = ActorRegistry(factory, nursery, idle_s=60)
        gate = trio.Event()
        answers: list[Any] = []

        async def call(message: Any, internal: bool = False) -> None:
            answers.append(await registry.call("a", message, internal=internal))

        nursery.start_soon(call, ("wait", gate))
        await wait_all_tasks_blocked()
        nursery.start_soon(partial(registry.drain, grace_s=5))
        await wait_all_tasks_blocked()
        with trio.fail_after(bound(2)):
            with pytest.raises(ContractError) as info:
                await registry.call("b", "inc", internal=True)  # no new actor while draining
            assert info.value.code == "unavailable"
        nursery.start_soon(partial(call, "inc", internal=True))  # an existing actor's follow-up
        await wait_all_tasks_blocked()
        gate.set()
    assert sorted(answers) == [1, 2]


async def test_a_passive_actor_has_no_task_until_it_has_queued_work(autojump_clock):
    async with trio.open_nursery() as nursery:
        registry = ActorRegistry(factory, nursery, idle_s=60)
        assert await registry.call("a", "inc") == 1
        assert registry.running == 0 and len(registry) == 1
        gate = trio.Event()
        nursery.start_soon(registry.call, "a", ("wait", gate))
        await wait_all_tasks_blocked()
        assert registry.running == 1
        gate.set()
        await wait_all_tasks_blocked()
        assert registry.running == 0
        await registry.drain()


async def test_drain_returns_as_soon_as_the_last_actor_settles(autojump_clock):
    async with trio.open_nursery() as nursery:
        registry = ActorRegistry(factory, nursery, idle_s=60)
        await registry.call("a", "inc")
        actor = registry._entries["a"].actor
        assert isinstance(actor, Counter)
        actor.busy = True
        drained = trio.Event()

        async def drain() -> None:
            await registry.drain(grace_s=15)
            drained.set()

        started = trio.current_time()
        nursery.start_soon(drain)
        await wait_all_tasks_blocked()
        assert not drained.is_set()
        actor.busy = False
        actor.ref.settled()
        await drained.wait()
        assert trio.current_time() == started  # woken by the actor, not by a poll or the grace


async def test_a_project_is_quiet_once_untouched_for_a_while_and_holding_nothing(autojump_clock):
    async with trio.open_nursery() as nursery:
        registry = ActorRegistry(factory, nursery, idle_s=60)
        assert registry.quiet("a", 2.0)  # nothing of it here at all
        await registry.call("a", "inc")
        assert not registry.quiet("a", 2.0)  # touched just now
        await trio.sleep(2.0)
        assert registry.quiet("a", 2.0)
        release = trio.Event()
        nursery.start_soon(registry.call, "a", ("wait", release))
        await wait_all_tasks_blocked()
        await trio.sleep(3.0)
        assert not registry.quiet("a", 2.0)  # untouched for long, but busy with a message
        release.set()
        await wait_all_tasks_blocked()
        await trio.sleep(2.0)
        assert registry.quiet("a", 2.0)
        await registry.drain()


async def test_letting_a_project_go_waits_for_its_started_work_and_refuses_new(autojump_clock):
    async with trio.open_nursery() as nursery:
        leased = {"p"}
        registry = ActorRegistry(
            factory, nursery, idle_s=60, held=lambda project, actor: project in leased
        )
        release = trio.Event()
        answers: list[Any] = []

        async def started() -> None:
            answers.append(await registry.call("p", ("wait", release)))

        nursery.start_soon(started)
        await wait_all_tasks_blocked()
        gone = trio.Event()

        async def let_go() -> None:
            await registry.let_go("p", grace_s=5.0)
            gone.set()

        nursery.start_soon(let_go)
        await wait_all_tasks_blocked()
        assert "p" in registry and not gone.is_set()  # the started work holds it
        with pytest.raises(ContractError) as refused:
            await registry.call("p", "inc")
        assert refused.value.code == "unavailable" and refused.value.retryable
        release.set()
        await gone.wait()
        assert answers == [1] and "p" not in registry
        leased.clear()  # its lease ended: the project is another node's now
        # an internal follow-up of the dropped actor is refused, not loaded here again
        with pytest.raises(ContractError) as moved:
            await registry.call("p", "inc", internal=True)
        assert moved.value.retryable and Counter.loads["p"] == 1
        leased.add("p")  # asked for by a request, and handed back
        assert await registry.call("p", "inc") == 2


async def test_letting_go_gives_up_waiting_after_its_grace(autojump_clock):
    async with trio.open_nursery() as nursery:
        registry = ActorRegistry(factory, nursery, idle_s=60, held=lambda project, actor: True)
        never = trio.Event()
        nursery.start_soon(partial(registry.call, "p", ("wait", never), 1000.0))
        await wait_all_tasks_blocked()
        before = trio.current_time()
        await registry.let_go("p", grace_s=1.0)
        assert "p" not in registry and trio.current_time() - before >= 1.0
        nursery.cancel_scope.cancel()
