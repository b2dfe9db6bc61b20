"""Keeps the two durable queues (the follow-up outbox and the notification queue) from growing
without end: at start and then hourly, what they keep past ``outbox.RETENTION_MS`` (finished
entries with their attempts, the endpoints' attempt logs) is deleted, a batch a commit: a long
backlog holds up requests for no more than one batch's reads at a time; and queue keys that
name no entry due then (left by an older node's unguarded settles) are deleted."""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import partial

import trio

from edge.errors import Unavailable
from edge.store import notifyq, outbox
from edge.store.engine import Contended, Engine
from edge.store.writer import StoreWriter

log = logging.getLogger("edge.retention")

PRUNE_EVERY_S = 3600.0


async def prune_queues(
    store: Engine,
    writer: StoreWriter,
    clock_ms: Callable[[], int],
    every_s: float = PRUNE_EVERY_S,
    *,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    task_status.started()
    expired = (partial(outbox.expired_ops, store), partial(notifyq.expired_ops, store))
    while True:
        deleted = 0
        try:
            for batch in expired:
                while ops := await batch(clock_ms()):
                    await writer.write(ops)
                    deleted += len(ops)
            deleted += await _strays_deleted(store, writer)
        except Unavailable:  # the store's outage is logged once, by the store
            pass
        except Exception:  # what is expired stays until the next pass
            log.exception("pruning the queues failed; trying again in %.0f s", every_s)
        if deleted:
            log.info("pruned %d expired queue records", deleted)
        await trio.sleep(every_s)


async def _strays_deleted(store: Engine, writer: StoreWriter) -> int:
    """Queue keys with no pending entry due then (``outbox.strays_ops``) deleted: each is
    passed over by the workers, yet read on every look. How many went."""
    deleted = 0
    for db in (outbox.DB, notifyq.DB):
        for ops in await outbox.strays_ops(store, db=db):
            try:
                await writer.write(ops)
            except Contended:  # settled or taken meanwhile: its key is its own again
                continue
            deleted += 1
    if deleted:
        log.warning("deleted %d queue keys that named no entry due then", deleted)
    return deleted
