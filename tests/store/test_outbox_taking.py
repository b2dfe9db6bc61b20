"""Taking a follow-up entry for one attempt (``outbox.claim_ops``), on both engines: two
takers of one entry, one wins; a settle after another took the entry over writes nothing."""

from __future__ import annotations

from typing import Any

import pytest
from support.engines import OpenEngine

from edge.store import outbox
from edge.store.engine import Contended

PROJECT = "prj_0000000000000000"


async def _entry(engine: OpenEngine) -> tuple[dict[str, Any], bytes]:
    ops = outbox.enqueue_ops(
        PROJECT, "tx_1", "btcpay", "test", "refund", {"refundId": "rf_1"}, 1000
    )
    await engine.writer.write(ops)
    entry_id = outbox.entry_id_of(ops)
    raw = await engine.reads.get_raw(outbox.entry_key(entry_id), db=outbox.DB)
    entry = await outbox.entry(engine.reads, entry_id)
    assert raw is not None and entry is not None
    return entry, raw


async def test_of_two_takers_of_one_entry_one_wins(engine: OpenEngine) -> None:
    entry, raw = await _entry(engine)
    taken, _, first = outbox.claim_ops(entry, raw, 50_000)
    _, _, second = outbox.claim_ops(entry, raw, 60_000)  # read before the first took it
    await engine.writer.write(first)
    with pytest.raises(Contended):
        await engine.writer.write(second)
    stored = await outbox.entry(engine.reads, entry["id"])
    assert stored == taken and (stored["dueAt"], stored["begun"]) == (50_000, 1)
    assert await outbox.due(engine.reads, 49_999, 10) == []  # due to no one until its time
    assert [e["id"] for e in await outbox.due(engine.reads, 50_000, 10)] == [entry["id"]]


async def test_a_settle_after_the_entry_was_taken_over_writes_nothing(engine: OpenEngine) -> None:
    entry, raw = await _entry(engine)
    mine, mine_raw, take = outbox.claim_ops(entry, raw, 50_000)
    await engine.writer.write(take)
    # the attempt outlived its time: another node took the entry over
    theirs, _, again = outbox.claim_ops(mine, mine_raw, 90_000)
    await engine.writer.write(again)
    attempt = {"at": 1, "durationMs": 1, "outcome": "done", "detail": ""}
    late = outbox.settle_ops(mine, attempt, state=outbox.DONE, taken=mine_raw)
    with pytest.raises(Contended):
        await engine.writer.write(late)
    stored = await outbox.entry(engine.reads, entry["id"])
    assert stored == theirs and stored["begun"] == 2 and outbox.begun(stored) == 2
    assert await outbox.attempts(engine.reads, entry["id"]) == []
