"""Status reads and long polls, through the actor on a real store."""

from __future__ import annotations

import json

import trio
import trio.lowlevel
from support.waits import bound
from trio.testing import wait_all_tasks_blocked

from edge.actors import messages as m


async def _pending(harness):
    project_id = await harness.project("manual")
    answer = await harness.call(project_id, m.StartCheckout("manual", "book", {}, 1, "test"))
    return project_id, answer["txId"]


async def test_a_status_read_answers_the_public_record(harness):
    project_id, tx_id = await _pending(harness)
    status = json.loads(await harness.call(project_id, m.GetStatus(tx_id)))
    assert (status["id"], status["status"], status["version"]) == (tx_id, "pending", 1)
    assert "metadata" not in status  # nothing about the buyer


async def test_a_long_poll_is_answered_by_the_commit_that_changes_the_record(harness):
    project_id, tx_id = await _pending(harness)
    answers = []

    async def poll() -> None:
        answers.append(await harness.call(project_id, m.GetStatus(tx_id, 30.0, 1)))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(poll)
        await wait_all_tasks_blocked()
        assert answers == []  # parked
        with trio.fail_after(bound(5)):
            await harness.call(project_id, m.MarkPaid(tx_id, "test"))
            while not answers:
                await trio.lowlevel.checkpoint()
    status = json.loads(answers[0])
    assert (status["status"], status["version"]) == ("succeeded", 2)


async def test_a_long_poll_behind_the_version_answers_at_once(harness):
    project_id, tx_id = await _pending(harness)
    with trio.fail_after(bound(5)):
        status = json.loads(await harness.call(project_id, m.GetStatus(tx_id, 30.0, 0)))
    assert status["version"] == 1


async def test_a_long_poll_times_out_with_the_record_unchanged(harness, mock_clock):
    project_id, tx_id = await _pending(harness)
    answers = []

    async def poll() -> None:
        answers.append(await harness.call(project_id, m.GetStatus(tx_id, 20.0, 1)))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(poll)
        await wait_all_tasks_blocked()
        mock_clock.jump(19)
        await wait_all_tasks_blocked()
        assert answers == []
        mock_clock.jump(1)
    assert json.loads(answers[0])["version"] == 1
    assert harness.registry._entries[project_id].actor.idle()


async def test_a_stopping_node_releases_long_polls(harness):
    project_id, tx_id = await _pending(harness)
    answers = []

    async def poll() -> None:
        answers.append(await harness.call(project_id, m.GetStatus(tx_id, 30.0, 1)))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(poll)
        await wait_all_tasks_blocked()
        harness.registry.stop_waiting()
    assert json.loads(answers[0])["version"] == 1
