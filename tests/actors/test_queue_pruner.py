"""The queue pruner on a real store: at start it deletes what both queues keep past the
retention (finished entries with their attempts, attempt log lines), a batch a commit, and
keeps what is still owed."""

from __future__ import annotations

import time

import trio
from support.waits import until

from edge.actors.queue_pruner import prune_queues
from edge.store import notifyq, outbox
from edge.store.lmdb.store import Store
from edge.store.writer import StoreWriter

PROJECT = "prj_0000000000000000"
ENDPOINT = "we_01JD0000000000000000000001"


async def finished(writer: StoreWriter, store: Store, db: str, state: str) -> str:
    ops = outbox.enqueue_ops(PROJECT, "tx_1", "p", "live", "capture", {}, 1_000, db=db)
    await writer.write(ops)
    entry_id = ops[0][1][len(outbox.ENTRY) :].decode()
    entry = await outbox.entry(store, entry_id, db=db)
    attempt = {"at": 1_000, "durationMs": 5, "outcome": state, "detail": ""}
    due = 5_000 if state == "pending" else None
    await writer.write(outbox.settle_ops(entry, attempt, state=state, due_ms=due, db=db))  # type: ignore[arg-type]
    return entry_id


async def test_the_pruner_empties_both_queues_of_what_expired_and_keeps_what_is_owed(
    store: Store, writer: StoreWriter
) -> None:
    done = [await finished(writer, store, db, "done") for db in ("outbox", "notify") * 300]
    owed = [await finished(writer, store, db, "pending") for db in ("outbox", "notify")]
    await writer.write([notifyq.log_op(ENDPOINT, {"at": 1}) for _ in range(700)])
    later = int(time.time() * 1000) + outbox.RETENTION_MS + 60_000
    commits = writer.stats.commits

    async def log_deleted() -> bool:
        return not await notifyq.log(store, ENDPOINT)

    async with trio.open_nursery() as nursery:
        await nursery.start(prune_queues, store, writer, lambda: later)
        # the pass announces nothing: its last deletes (the attempt log's) are looked for
        await until(
            log_deleted,
            what="the pruner's first pass deleting the attempt log",
            timeout_s=20,
        )
        nursery.cancel_scope.cancel()
    for db in ("outbox", "notify"):
        left = [key for key, _ in await store.scan(outbox.ENTRY, db=db)]
        assert [outbox.entry_key(e) for e in owed if await outbox.entry(store, e, db=db)] == left
    assert len(done) == 600
    assert [e for e in done if await outbox.attempts(store, e, db="notify")] == []
    assert writer.stats.commits - commits >= 3  # a batch (500) a commit
