"""The notification queue (CONTRACT 4.8): events owed to merchants' endpoints.

The ``notify`` database holds a queue of the outbox's shape (``edge.store.outbox``: entries,
due times, attempts per entry), one entry per event and endpoint, written in the same commit as
the event; and, per endpoint, every attempt in time order, for the attempt log:

- ``x | endpoint id | attempt ulid`` -> {at, eventId, entryId, number, status, error,
  durationMs, outcome}.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from edge.domain import ids
from edge.domain.notifications import wants
from edge.store import outbox
from edge.store.codec import pack, unpack
from edge.store.env import Store
from edge.store.writer import Op

DB = "notify"
ACTION = "notify"
FAN_OUT = "fan-out"  # one entry an event, made into one entry an endpoint by the notifier
LOG = b"x"


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


def owed_ops(project: Mapping[str, Any], event: Mapping[str, Any], now_ms: int) -> list[Op]:
    """What an event owes the project's endpoints, written with it: one fan-out entry however
    many endpoints take it (the commit that ingests it stays small); the notifier makes it one
    entry an endpoint (``fan_out_ops``)."""
    if not takers(project, event):
        return []
    return outbox.enqueue_ops(
        project["id"],
        event.get("txId") or "",
        "",
        "test" if event["isTest"] else "live",
        FAN_OUT,
        {"eventId": event["id"]},
        now_ms,
        db=DB,
    )


def fan_out_ops(
    entry: Mapping[str, Any],
    project: Mapping[str, Any] | None,
    event: Mapping[str, Any] | None,
    now_ms: int,
) -> list[Op]:
    """The fan-out entry replaced by one entry for each endpoint that takes the event now (none
    when the project or the event is gone), in one commit."""
    ops: list[Op] = [
        (DB, outbox.queue_key(entry["dueAt"], entry["id"]), None),
        (DB, outbox.entry_key(entry["id"]), None),
    ]
    if project is None or event is None:
        return ops
    for endpoint in takers(project, event):
        ops += enqueue_ops(project["id"], endpoint["id"], event, endpoint["mode"], now_ms)
    return ops


def log_op(endpoint_id: str, attempt: Mapping[str, Any]) -> Op:
    key = LOG + endpoint_id.encode("ascii") + ids.new_ulid().encode("ascii")
    return (DB, key, pack(dict(attempt)))


def log(store: Store, endpoint_id: str, limit: int = 100) -> list[dict[str, Any]]:
    """An endpoint's attempts, newest first."""
    rows = store.scan(LOG + endpoint_id.encode("ascii"), reverse=True, limit=limit, db=DB)
    return [unpack(value) for _, value in rows]
