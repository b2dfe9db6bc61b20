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
- ``u | event id`` -> the ids of the endpoints an ``unmatched`` event was queued for, space
  separated: when a later event matches it, it is fanned out again under its real type, and an
  endpoint that was owed it already is not owed it twice (one message a ``webhook-id``).

Finished queue entries and the attempt log are kept ``outbox.RETENTION_MS``, the ``u`` keys as
long as the feed keeps their event (``expired_ops``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from edge.domain import ids
from edge.domain.events import FEED_KEPT_MS
from edge.domain.notifications import UNMATCHED, wants
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
TOLD = b"u"
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
    when no endpoint takes it or it repeats a change already told (``duplicateOf``). An event
    matched after it was stored owes its fan-out again, under a value of its own (the project
    id and when it was matched): a fan-out of the event as it stood before, read before the
    match and committed after it, then fails its guard instead of taking the match's key."""
    if event.get("duplicateOf") or not takers(project, event):
        return []
    value = project["id"].encode("ascii")
    matched = event.get("matchedAt")
    if matched:
        value += b" %d" % matched
    return [(DB, FAN_OUT + event["id"].encode("ascii"), value)]


class Owed(NamedTuple):
    """An event still to fan out: its project, its id, and the fan-out key's value (its
    guard)."""

    project_id: str
    event_id: str
    value: bytes


async def fan_outs(store: Engine, limit: int) -> list[Owed]:
    """The events still to fan out, oldest first."""
    rows = await store.scan(FAN_OUT, limit=limit, db=DB)
    return [
        Owed(value.split(b" ", 1)[0].decode("ascii"), key[1:].decode("ascii"), value)
        for key, value in rows
    ]


def fan_out_ops(
    owed: Owed,
    project: Mapping[str, Any] | None,
    event: Mapping[str, Any] | None,
    now_ms: int,
    told: bytes | None = None,
) -> list[Op]:
    """The fan-out key replaced by one queue entry for each endpoint that takes the event now
    (none when the project or the event is gone), in one commit that holds only while the key
    is still as read: an event is fanned out once, even by two nodes at a lease's hand-over
    (the loser's commit fails with ``Contended``). ``told``: the ``u`` key's value, when the
    event was fanned out before as ``unmatched`` (it is matched now): the endpoints it names
    have it already (their entry sends the event as it stands when it goes out), so they are
    skipped, and the key goes."""
    key = FAN_OUT + owed.event_id.encode("ascii")
    ops: list[Op] = [expect_op(DB, key, owed.value), (DB, key, None)]
    if told is not None:
        ops.append((DB, TOLD + owed.event_id.encode("ascii"), None))
    if project is None or event is None:
        return ops
    skipped = set(told.decode("ascii").split()) if told else set()
    queued = [endpoint for endpoint in takers(project, event) if endpoint["id"] not in skipped]
    for endpoint in queued:
        ops += enqueue_ops(project["id"], endpoint["id"], event, endpoint["mode"], now_ms)
    if event["type"] == UNMATCHED and queued:
        told_now = " ".join(endpoint["id"] for endpoint in queued).encode("ascii")
        ops.append((DB, TOLD + owed.event_id.encode("ascii"), told_now))
    return ops


async def told(store: Engine, event_id: str) -> bytes | None:
    """The ``u`` key of an event: the endpoints it was queued for while it was ``unmatched``."""
    return await store.get_raw(TOLD + event_id.encode("ascii"), db=DB)


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
    each endpoint's lines come oldest first, so a scan skips from one endpoint to the next);
    and ``u`` keys of events the feed no longer keeps (never matched: there is nothing left
    to match)."""
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
    if len(ops) < batch:
        # event ids are evt_ + a ULID: the oldest come first
        oldest = TOLD + b"evt_" + ids.ulid_floor(max(0, now_ms - FEED_KEPT_MS)).encode("ascii")
        for key, _ in await store.scan(TOLD, limit=batch - len(ops), db=DB):
            if key >= oldest:
                break
            ops.append((DB, key, None))
    return ops


async def log(store: Engine, endpoint_id: str, limit: int = 100) -> list[dict[str, Any]]:
    """An endpoint's attempts, newest first."""
    rows = await store.scan(LOG + endpoint_id.encode("ascii"), reverse=True, limit=limit, db=DB)
    return [unpack(value) for _, value in rows]
