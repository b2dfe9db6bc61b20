"""The outbox's keys and writes: due entries soonest first, a retry moves its queue key, a
settled entry leaves the queue and keeps its attempts in order; finished entries are pruned
with their attempts once past the retention, pending ones never."""

from __future__ import annotations

import time
from pathlib import Path

from edge.domain import ids
from edge.store import outbox
from edge.store.codec import pack, unpack
from edge.store.lmdb.store import open_store
from edge.store.writer import open_writer

PROJECT = "prj_0000000000000000"


def entry_id_of(ops: list) -> str:
    return ops[0][1][len(outbox.ENTRY) :].decode()


async def test_due_is_soonest_first_and_settling_moves_the_queue(tmp_path: Path):
    with open_store(tmp_path / "store", 2**26) as store:
        async with open_writer(store) as writer:
            late = outbox.enqueue_ops(PROJECT, "tx_B", "p", "live", "capture", {}, 2_000)
            early = outbox.enqueue_ops(PROJECT, "tx_A", "p", "live", "capture", {"n": 1}, 1_000)
            await writer.write(late + early)
            assert [e["txId"] for e in await outbox.due(store, 1_500, 10)] == ["tx_A"]
            assert [e["txId"] for e in await outbox.due(store, 5_000, 10)] == ["tx_A", "tx_B"]
            assert await outbox.next_due_ms(store) == 1_000

            first = await outbox.entry(store, entry_id_of(early))
            assert first is not None and first["params"] == {"n": 1}
            attempt = {"at": 1_000, "durationMs": 5, "outcome": "retry", "detail": "503"}
            retry = outbox.settle_ops(first, attempt, state="pending", due_ms=9_000, detail="503")
            await writer.write(retry)
            assert [e["txId"] for e in await outbox.due(store, 5_000, 10)] == ["tx_B"]
            assert await outbox.next_due_ms(store) == 2_000

            again = await outbox.entry(store, entry_id_of(early))
            assert again is not None and (again["attempts"], again["dueAt"]) == (1, 9_000)
            done = {"at": 9_000, "durationMs": 7, "outcome": "done", "detail": "ok"}
            await writer.write(outbox.settle_ops(again, done, state="done", detail="ok"))
            settled = await outbox.entry(store, entry_id_of(early))
            assert settled is not None and (settled["state"], settled["attempts"]) == ("done", 2)
            attempts = await outbox.attempts(store, entry_id_of(early))
            assert [(a["number"], a["outcome"]) for a in attempts] == [(1, "retry"), (2, "done")]
            assert [e["txId"] for e in await outbox.due(store, 10**12, 10)] == ["tx_B"]


async def test_finished_entries_are_pruned_with_their_attempts_after_the_retention(store, writer):
    made = {}
    for state in ("done", "failed", "dropped", "pending"):
        ops = outbox.enqueue_ops(PROJECT, f"tx_{state}", "p", "live", "capture", {}, 1_000)
        await writer.write(ops)
        entry = await outbox.entry(store, entry_id_of(ops))
        attempt = {"at": 1_000, "durationMs": 5, "outcome": "retry", "detail": ""}
        due = 9_000 if state == "pending" else None
        await writer.write(outbox.settle_ops(entry, attempt, state=state, due_ms=due))
        made[state] = entry_id_of(ops)
    created = (await outbox.entry(store, made["done"]))["createdAt"]  # type: ignore[index]
    oldest = ids.ulid_time_ms(made["done"])
    assert await outbox.expired_ops(store, oldest + outbox.RETENTION_MS) == []  # not yet

    later = ids.ulid_time_ms(made["pending"]) + outbox.RETENTION_MS + 1
    pruned = await outbox.expired_ops(store, later)
    await writer.write(pruned)
    assert len(pruned) == 3 * 2  # each finished entry and its one attempt
    assert [await outbox.entry(store, made[s]) is None for s in made] == [True, True, True, False]
    for finished in ("done", "failed", "dropped"):
        assert await outbox.attempts(store, made[finished]) == []
    assert len(await outbox.attempts(store, made["pending"])) == 1
    assert await outbox.expired_ops(store, later) == [] and created == 1_000


async def test_a_prune_looks_at_a_batch_of_the_oldest_entries(store, writer):
    for _ in range(5):
        ops = outbox.enqueue_ops(PROJECT, "tx_A", "p", "live", "capture", {}, 1_000)
        await writer.write(ops)
        entry = await outbox.entry(store, entry_id_of(ops))
        done = {"at": 1_000, "durationMs": 5, "outcome": "done", "detail": ""}
        await writer.write(outbox.settle_ops(entry, done, state="done"))
    later = int(time.time() * 1000) + outbox.RETENTION_MS + 60_000
    first = await outbox.expired_ops(store, later, batch=2)
    assert len(first) == 2 * 2
    await writer.write(first)
    assert len(await outbox.expired_ops(store, later)) == 3 * 2


async def test_a_queue_key_naming_no_entry_due_then_is_passed_over_and_pruned(store, writer):
    """A stray queue key (its entry gone, finished, or due at another time: left by an older
    node's unguarded settle) would be due in the past for ever and have a worker look again
    without pause: the next due time passes over it, and the pruner deletes it, each only
    while its entry is as read."""
    owed = outbox.enqueue_ops(PROJECT, "tx_A", "p", "live", "capture", {}, 9_000)
    await writer.write(owed)
    gone = outbox.queue_key(1_000, ids.new_ulid())  # its entry deleted
    moved = outbox.queue_key(2_000, entry_id_of(owed))  # its entry is due at 9_000
    done = outbox.enqueue_ops(PROJECT, "tx_B", "p", "live", "capture", {}, 3_000)
    entry = {**unpack(done[0][2] or b""), "state": "done"}
    await writer.write([(outbox.DB, gone, b""), (outbox.DB, moved, b""), done[1]])
    await writer.write([(outbox.DB, done[0][1], pack(entry))])
    assert await outbox.next_due_ms(store) == 9_000
    tickets = await outbox.strays_ops(store)
    assert len(tickets) == 3
    for ops in tickets:
        await writer.write(ops)
    assert [key for key, _ in await store.scan(outbox.QUEUE, db=outbox.DB)] == [owed[1][1]]
    assert [e["txId"] for e in await outbox.due(store, 10**12, 10)] == ["tx_A"]
