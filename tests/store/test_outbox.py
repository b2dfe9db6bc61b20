"""The outbox's keys and writes: due entries soonest first, a retry moves its queue key, a
settled entry leaves the queue and keeps its attempts in order."""

from __future__ import annotations

from pathlib import Path

from edge.store import outbox
from edge.store.env import open_store
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
            assert [e["txId"] for e in outbox.due(store, 1_500, 10)] == ["tx_A"]
            assert [e["txId"] for e in outbox.due(store, 5_000, 10)] == ["tx_A", "tx_B"]
            assert outbox.next_due_ms(store) == 1_000

            first = outbox.entry(store, entry_id_of(early))
            assert first is not None and first["params"] == {"n": 1}
            attempt = {"at": 1_000, "durationMs": 5, "outcome": "retry", "detail": "503"}
            retry = outbox.settle_ops(first, attempt, state="pending", due_ms=9_000, detail="503")
            await writer.write(retry)
            assert [e["txId"] for e in outbox.due(store, 5_000, 10)] == ["tx_B"]
            assert outbox.next_due_ms(store) == 2_000

            again = outbox.entry(store, entry_id_of(early))
            assert again is not None and (again["attempts"], again["dueAt"]) == (1, 9_000)
            done = {"at": 9_000, "durationMs": 7, "outcome": "done", "detail": "ok"}
            await writer.write(outbox.settle_ops(again, done, state="done", detail="ok"))
            settled = outbox.entry(store, entry_id_of(early))
            assert settled is not None and (settled["state"], settled["attempts"]) == ("done", 2)
            attempts = outbox.attempts(store, entry_id_of(early))
            assert [(a["number"], a["outcome"]) for a in attempts] == [(1, "retry"), (2, "done")]
            assert [e["txId"] for e in outbox.due(store, 10**12, 10)] == ["tx_B"]
