"""The event feed keeps 90 days (CONTRACT 4.5). Event ids are ULIDs, so a project's events sit
oldest first under its prefix: pruning reads only what has expired, a batch at a time, and
start-up never scans anything."""

from __future__ import annotations

from edge.domain.ids import ulid_time_ms
from edge.domain.notifications import may_have_changed
from edge.store import keys, notifyq
from edge.store.codec import unpack
from edge.store.engine import Engine, Op

EVENT_RETENTION_MS = 90 * 24 * 3600 * 1000  # CONTRACT 4.5
PRUNE_EVERY_MS = 3600 * 1000
PRUNE_BATCH = 500


async def expired_event_ops(store: Engine, project_id: str, now_ms: int) -> list[Op]:
    """Deletes for up to PRUNE_BATCH events older than the retention, with their history and
    deduplication entries, and whom one that may change its type was told to (``notifyq``).
    Transactions themselves are kept."""
    cutoff = now_ms - EVENT_RETENTION_MS
    prefix = keys.prefix(project_id, keys.EVENT)
    ops: list[Op] = []
    for key, raw in await store.scan(prefix, limit=PRUNE_BATCH):
        evt_id = key[len(prefix) :].decode()
        if ulid_time_ms(evt_id.removeprefix("evt_")) >= cutoff:
            break
        event = unpack(raw)
        ops.append(("records", key, None))
        if event.get("txId"):
            ops.append(("records", keys.history(project_id, event["txId"], evt_id), None))
        if may_have_changed(event):
            ops += await notifyq.told_pruned_ops(store, evt_id)  # whom it was told to
        for dedup_id in event.get("dedupIds") or filter(None, [event.get("providerEventId")]):
            dedup = keys.named(project_id, keys.DEDUP, event["provider"], dedup_id)
            ops.append(("records", dedup, None))
    return ops
