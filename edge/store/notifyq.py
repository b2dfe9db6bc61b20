"""The notification queue (CONTRACT 4.8): events owed to merchants' endpoints.

The ``notify`` database holds:

- ``f | event id`` -> project id: an event owed to the project's endpoints, written in the same
  commit as the event: one short key however many endpoints take it, so the commit that ingests
  it stays small. Event ids are ULIDs, so these come oldest first. The notifier replaces each
  with one queue entry an endpoint (``fan_out_ops``).
- a queue of the outbox's shape (``edge.store.outbox``: entries, due times, attempts per
  entry), one entry per event and endpoint;
- per endpoint, every attempt in time order, for the attempt log:
  ``x | endpoint id | attempt ulid`` -> {at, eventId, entryId, number, status, error,
  durationMs, outcome}.

Finished queue entries and the attempt log are kept ``outbox.RETENTION_MS`` (``expired_ops``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from edge.domain import ids
from edge.domain.notifications import wants
from edge.store import outbox
from edge.store.codec import pack, unpack
from edge.store.engine import Engine, Op, expect_op

DB = "notify"
ACTION = "notify"
FAN_OUT = b"f"
# Nodes before the ``f`` keys queued an event's fan-out as a queue entry of this action; such an
# entry left in a store is moved to its ``f`` key (``refiled_ops``).
FAN_OUT_ENTRY = "fan-out"
LOG = b"x"
ENDPOINT_ID_LEN = len("we_") + 26


def enqueue_ops(
    project_id: str, endpoint_id: str, event: Mapping[str, Any], mode: str, now_ms: int
) -> list[Op]:
    return outbox.enqueue_ops(
        project_id,
        event.get("txId") or "",
        endpoint_id,
        mode,
        ACTION,
        {"endpointId": endpoint_id, "eventId": event["id"]},
        now_ms,
        db=DB,
    )


def enabled_endpoint(
    project: Mapping[str, Any] | None, endpoint_id: str | None
) -> Mapping[str, Any] | None:
    """The project's endpoint if it is there and enabled: one that takes notifications."""
    endpoint = ((project or {}).get("endpoints") or {}).get(endpoint_id)
    return endpoint if endpoint and endpoint.get("enabled") else None


def takers(project: Mapping[str, Any], event: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The project's enabled endpoints that take this event."""
    return [
        endpoint
        for endpoint in (project.get("endpoints") or {}).values()
        if endpoint.get("enabled")
        and wants(
            endpoint.get("types") or (), bool(event["isTest"]), endpoint["mode"], event["type"]
        )
    ]


def owed_ops(project: Mapping[str, Any], event: Mapping[str, Any]) -> list[Op]:
    """What an event owes the project's endpoints, written with it: one fan-out key, or nothing
    when no endpoint takes it or it repeats a change already told (``duplicateOf``)."""
    if event.get("duplicateOf") or not takers(project, event):
        return []
    return [(DB, FAN_OUT + event["id"].encode("ascii"), project["id"].encode("ascii"))]


async def fan_outs(store: Engine, limit: int) -> list[tuple[str, str]]:
    """(project id, event id) of the events still to fan out, oldest first."""
    rows = await store.scan(FAN_OUT, limit=limit, db=DB)
    return [(project.decode("ascii"), key[1:].decode("ascii")) for key, project in rows]


def fan_out_ops(
    event_id: str,
    project_id: str,
    project: Mapping[str, Any] | None,
    event: Mapping[str, Any] | None,
    now_ms: int,
) -> list[Op]:
    """The fan-out key replaced by one queue entry for each endpoint that takes the event now
    (none when the project or the event is gone), in one commit that holds only while the key
    is still there: an event is fanned out once, even by two nodes at a lease's hand-over
    (the loser's commit fails with ``Contended``)."""
    key = FAN_OUT + event_id.encode("ascii")
    ops: list[Op] = [expect_op(DB, key, project_id.encode("ascii")), (DB, key, None)]
    if project is None or event is None:
        return ops
    for endpoint in takers(project, event):
        ops += enqueue_ops(project["id"], endpoint["id"], event, endpoint["mode"], now_ms)
    return ops


def refiled_ops(entry: Mapping[str, Any]) -> list[Op]:
    """A ``FAN_OUT_ENTRY`` queue entry replaced by its event's fan-out key."""
    return [
        (DB, outbox.queue_key(entry["dueAt"], entry["id"]), None),
        (DB, outbox.entry_key(entry["id"]), None),
        (DB, FAN_OUT + entry["params"]["eventId"].encode("ascii"), entry["projectId"].encode()),
    ]


async def depth(store: Engine, limit: int) -> int:
    """Events still to fan out and queued notifications, counted up to ``limit`` each."""
    owed = await store.scan(FAN_OUT, limit=limit, db=DB)
    return len(owed) + len(await store.scan(outbox.QUEUE, limit=limit, db=DB))


def log_op(endpoint_id: str, attempt: Mapping[str, Any]) -> Op:
    key = LOG + endpoint_id.encode("ascii") + ids.new_ulid().encode("ascii")
    return (DB, key, pack(dict(attempt)))


async def expired_ops(store: Engine, now_ms: int, batch: int = outbox.PRUNE_BATCH) -> list[Op]:
    """Deletes for up to ``batch`` of what is kept past ``outbox.RETENTION_MS``: finished queue
    entries with their attempts, and attempt log lines (of every endpoint, deleted ones too:
    each endpoint's lines come oldest first, so a scan skips from one endpoint to the next)."""
    ops = await outbox.expired_ops(store, now_ms, db=DB, batch=batch)
    cutoff = ids.ulid_floor(max(0, now_ms - outbox.RETENTION_MS)).encode("ascii")
    after: bytes | None = None
    while len(ops) < batch:
        first = await store.scan(LOG, after=after, limit=1, db=DB)
        if not first:
            break
        lines = first[0][0][: len(LOG) + ENDPOINT_ID_LEN]
        for key, _ in await store.scan(lines, limit=batch - len(ops), db=DB):
            if key[len(lines) :] >= cutoff:
                break
            ops.append((DB, key, None))
        after = lines + b"~"  # past every ULID (Crockford letters and digits sort before ~)
    return ops


async def log(store: Engine, endpoint_id: str, limit: int = 100) -> list[dict[str, Any]]:
    """An endpoint's attempts, newest first."""
    rows = await store.scan(LOG + endpoint_id.encode("ascii"), reverse=True, limit=limit, db=DB)
    return [unpack(value) for _, value in rows]
