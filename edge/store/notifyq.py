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
- ``u | event id`` -> ``endpoint id:queue entry id`` for each endpoint an ``unmatched`` event
  was queued for, space separated: when a later event matches it, it is fanned out again under
  its real type, and an endpoint whose entry went out or is still to go is not owed it twice
  (one message a ``webhook-id``); one whose entry was dropped or failed is owed it again. The
  key goes with that second fan-out, or with its event (``retention``).

Finished queue entries and the attempt log are kept ``outbox.RETENTION_MS`` (``expired_ops``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from edge.domain import ids
from edge.domain.notifications import UNMATCHED, wants
from edge.store import keys, outbox
from edge.store.codec import pack, unpack
from edge.store.engine import Engine, Op, expect_op

DB = "notify"
ACTION = "notify"
FAN_OUT = b"f"
# Nodes before the ``f`` keys queued an event's fan-out as a queue entry of this action; such an
# entry left in a store is moved to its ``f`` key (``refiled_ops``).
FAN_OUT_ENTRY = "fan-out"
LOG = b"x"
TOLD = b"u"
ENDPOINT_ID_LEN = len("we_") + 26


def enqueue_ops(
    project_id: str,
    endpoint_id: str,
    event: Mapping[str, Any],
    mode: str,
    now_ms: int,
    fanned_out: bool = False,
) -> list[Op]:
    """An entry owing ``event`` to the endpoint. ``fanned_out``: owed because the endpoint
    takes events of its type (not a replay asked by name), so the entry keeps that type: sent
    only while the event still is of a type the endpoint takes (``still_wanted``)."""
    params = {"endpointId": endpoint_id, "eventId": event["id"]}
    if fanned_out:
        params["type"] = event["type"]
    return outbox.enqueue_ops(
        project_id, event.get("txId") or "", endpoint_id, mode, ACTION, params, now_ms, db=DB
    )


def still_wanted(
    queued_type: str | None, endpoint: Mapping[str, Any], event: Mapping[str, Any]
) -> bool:
    """Is a fanned-out entry's event still one the endpoint takes? An event queued as
    ``unmatched`` may be matched before it goes out: it goes as what it became if the endpoint
    takes that too, and not at all if it became a repeat of a change already told
    (``duplicateOf``). A replay (no type kept) goes as asked."""
    if queued_type is None or queued_type == event["type"]:
        return True
    return not event.get("duplicateOf") and wants(
        endpoint.get("types") or (), bool(event["isTest"]), endpoint["mode"], event["type"]
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


class Owed(NamedTuple):
    """An event still to fan out: its project, its id, and the fan-out key's value."""

    project_id: str
    event_id: str
    value: bytes


async def fan_outs(store: Engine, limit: int) -> list[Owed]:
    """The events still to fan out, oldest first."""
    rows = await store.scan(FAN_OUT, limit=limit, db=DB)
    return [Owed(value.decode("ascii"), key[1:].decode("ascii"), value) for key, value in rows]


async def fan_out(
    store: Engine, owed: Owed, project: Mapping[str, Any] | None, now_ms: int
) -> list[Op]:
    """``fan_out_ops`` for an owed event, with what they read: the event as stored and, for one
    matched after it was stored, the endpoints that had it as ``unmatched``."""
    stored = await store.get_raw(keys.record(owed.project_id, keys.EVENT, owed.event_id))
    event = unpack(stored) if stored is not None else None
    told = None
    if event is not None and event.get("matchedAt"):
        told = await store.get_raw(TOLD + owed.event_id.encode("ascii"), db=DB)
    had = await _had(store, told) if told is not None else None
    return fan_out_ops(owed, project, stored, now_ms, had)


async def _had(store: Engine, told: bytes) -> frozenset[str]:
    """The endpoints of a ``u`` key whose entry went out or is still to go. An entry no longer
    kept (finished, past ``outbox.RETENTION_MS``) is counted as gone out: it cannot be told
    from one that failed, and a second message under one ``webhook-id`` is what must not be."""
    had = set()
    for pair in told.decode("ascii").split():
        endpoint_id, _, entry_id = pair.partition(":")
        entry = await outbox.entry(store, entry_id, db=DB) if entry_id else None
        if entry is None or entry["state"] in (outbox.PENDING, outbox.DONE):
            had.add(endpoint_id)
    return frozenset(had)


def fan_out_ops(
    owed: Owed,
    project: Mapping[str, Any] | None,
    stored: bytes | None,
    now_ms: int,
    had: frozenset[str] | None = None,
) -> list[Op]:
    """The fan-out key replaced by one queue entry for each endpoint that takes the event now
    (none when the project or the event is gone), in one commit that holds only while the key
    and the event are still as read: an event is fanned out once, even by two nodes at a
    lease's hand-over, and a fan-out of an event as it stood before a later event matched it
    does not take the match's key (the loser's commit fails with ``Contended``; what is owed
    is read afresh). ``had``: for an event fanned out before as ``unmatched`` and matched
    since, the endpoints that have it (``_had``): skipped, and its ``u`` key goes."""
    key = FAN_OUT + owed.event_id.encode("ascii")
    ops: list[Op] = [expect_op(DB, key, owed.value), (DB, key, None)]
    told_key = TOLD + owed.event_id.encode("ascii")
    if had is not None:
        ops.append((DB, told_key, None))
    if project is None or stored is None:
        return ops
    ops.append(
        expect_op("records", keys.record(owed.project_id, keys.EVENT, owed.event_id), stored)
    )
    event = unpack(stored)
    told = []
    for endpoint in takers(project, event):
        if had is not None and endpoint["id"] in had:
            continue
        queued = enqueue_ops(
            project["id"], endpoint["id"], event, endpoint["mode"], now_ms, fanned_out=True
        )
        told.append(f"{endpoint['id']}:{outbox.entry_id_of(queued)}")
        ops += queued
    if event["type"] == UNMATCHED and told:
        ops.append((DB, told_key, " ".join(told).encode("ascii")))
    return ops


def told_op(event_id: str) -> Op:
    """The delete of an event's ``u`` key (with the event itself)."""
    return (DB, TOLD + event_id.encode("ascii"), None)


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
