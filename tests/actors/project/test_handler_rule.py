"""The handler rule (``edge.actors.project.actor``): every handler in the dispatch table is a
coroutine function of its own message class; on an engine whose reads never give way (LMDB) it
runs to its end without suspending, in the caller's task, and one that suspended there is
refused, never interleaved with the next message."""

from __future__ import annotations

import inspect
from typing import Any, get_type_hints

import pytest
import trio
from support.waits import bound

from edge.actors import messages as m
from edge.actors.project import ProjectActor
from edge.actors.project.actor import HANDLERS, run_through
from edge.errors import NotFound


def _actor(harness, project_id: str) -> ProjectActor:  # type: ignore[no-untyped-def]
    actor = harness.registry._entries[project_id].actor
    assert isinstance(actor, ProjectActor)
    return actor


async def test_every_handler_is_a_coroutine_function_of_its_own_message_class(harness):
    actor = _actor(harness, await harness.project("manual"))
    assert len(HANDLERS) > 40
    for kind, route in HANDLERS.items():
        handler = route(actor)
        assert inspect.iscoroutinefunction(handler), kind
        message_type = next(iter(get_type_hints(handler).values()))
        assert message_type is kind, (kind, handler)


async def test_on_lmdb_the_actor_answers_every_message_in_the_callers_task(harness):
    project_id = await harness.project("manual")
    actor = _actor(harness, project_id)
    replies: list[Any] = []
    assert not harness.ctx.store.features.reads_give_way
    # a read, a refusal and a write: each handled now, none through the mailbox
    assert actor.handle_now(m.GetProject(), replies.append)
    assert actor.handle_now(m.GetStatus("tx_aaaaaaaaaaaaaaaaaaaaaa"), replies.append)
    written = trio.Event()

    def durable(value: Any) -> None:
        replies.append(value)
        written.set()

    assert actor.handle_now(m.PutProduct({**_BOOK, "id": "pen"}), durable)
    with trio.fail_after(bound(30)):
        await written.wait()  # the write's reply waits for its commit, not the handler
    project, missing, product = (getattr(r, "value", r) for r in replies)
    assert project["id"] == project_id
    assert isinstance(missing, NotFound)
    assert product["id"] == "pen"
    assert harness.registry.running == 0


async def test_a_handler_that_suspends_is_refused_by_the_run_through() -> None:
    closed = []

    async def suspends() -> None:
        try:
            await trio.lowlevel.checkpoint()
        finally:
            closed.append(True)

    with pytest.raises(RuntimeError, match="gave way"):
        run_through(suspends())
    assert closed == [True]  # closed at once: nothing of it runs later, between other messages


async def test_a_handler_that_never_suspends_runs_to_its_end_in_the_run_through() -> None:
    ran = []

    async def reads_only() -> None:
        ran.append(True)

    run_through(reads_only())
    assert ran == [True]


_BOOK = {
    "name": "A pen",
    "kind": "payment",
    "interval": None,
    "amount": 500,
    "currency": "EUR",
    "overrides": {},
}
