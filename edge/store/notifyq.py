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
- ``u | event id | queue entry id`` -> endpoint id: each entry an event that may be of
  another type later (``edge.domain.notifications.may_change``: unmatched, a held refund) was
  queued in (its fan-out, or a replay): when it changes, it is fanned out again under its new
  type, and an endpoint with an entry that went out or is still to go is not owed it twice
  (one message a ``webhook-id``); one whose entries were all dropped or failed is owed it
  again. The keys go with the fan-out after which it cannot change again, or with their event
  (``retention``).

Finished queue entries and the attempt log are kept ``outbox.RETENTION_MS`` (``expired_ops``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from edge.domain import ids
from edge.domain.notifications import may_change, may_have_changed, takes
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


def _told(event_id: str) -> bytes:
    """The prefix of an event's ``u`` keys; each ends in its queue entry's id."""
    return TOLD + event_id.encode("ascii")


def enqueue_ops(
    project_id: str,
    endpoint_id: str,
    event: Mapping[str, Any],
    mode: str,
    now_ms: int,
    fanned_out: bool = False,
) -> list[Op]:
    """An entry owing ``event`` to the endpoint (and, for one that may be of another type
    later, its ``u`` key). ``fanned_out``: owed because the endpoint takes events of its type
    (not a replay asked for), so the entry keeps that type
    (``edge.domain.notifications.still_wanted``)."""
    params = {"endpointId": endpoint_id, "eventId": event["id"]}
    if fanned_out:
        params["type"] = event["type"]
    ops = outbox.enqueue_ops(
        project_id, event.get("txId") or "", endpoint_id, mode, ACTION, params, now_ms, db=DB
    )
    if may_change(event):
        told = _told(event["id"]) + outbox.entry_id_of(ops).encode("ascii")
        ops.append((DB, told, endpoint_id.encode("ascii")))
    return ops


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
        if endpoint.get("enabled") and takes(endpoint, event)
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
    that may have been told before under another type, the entries it had then."""
    stored = await store.get_raw(keys.record(owed.project_id, keys.EVENT, owed.event_id))
    event = unpack(stored) if stored is not None else None
    if event is None or not may_have_changed(event):
        return fan_out_ops(owed, project, stored, now_ms, event=event)
    prefix = _told(owed.event_id)
    told = await store.scan(prefix, db=DB)
    had = set()
    for key, endpoint_id in told:
        entry = await outbox.entry(store, key[len(prefix) :].decode("ascii"), db=DB)
        # an entry no longer kept (finished, past ``outbox.RETENTION_MS``) is counted as gone
        # out: it cannot be told from one that failed, and a second message under one
        # ``webhook-id`` is what must not be
        if entry is None or entry["state"] in (outbox.PENDING, outbox.DONE):
            had.add(endpoint_id.decode("ascii"))
    told_keys = [key for key, _ in told]
    return fan_out_ops(owed, project, stored, now_ms, frozenset(had), told_keys, event=event)


def fan_out_ops(
    owed: Owed,
    project: Mapping[str, Any] | None,
    stored: bytes | None,
    now_ms: int,
    had: frozenset[str] = frozenset(),
    told_keys: Sequence[bytes] = (),
    *,
    event: Mapping[str, Any] | None = None,
) -> list[Op]:
    """The fan-out key replaced by one queue entry for each endpoint that takes the event now
    (none when the project or the event is gone), in one commit that holds only while the key
    and the event are still as read: an event is fanned out once a time it is owed, even by
    two nodes at a lease's hand-over, and a fan-out of an event as it stood before a later
    event matched it does not take the match's key (the loser's commit fails with
    ``Contended``; what is owed is read afresh). For an event fanned out before under another
    type: ``had``, the endpoints that have it (skipped), and ``told_keys``, its ``u`` keys
    (deleted once it cannot change again: matched while its payment is still under way, a
    refund is held, and may change its word yet). ``event``: ``stored`` already unpacked."""
    key = FAN_OUT + owed.event_id.encode("ascii")
    ops: list[Op] = [expect_op(DB, key, owed.value), (DB, key, None)]
    if event is None and stored is not None:
        event = unpack(stored)
    if event is None or not may_change(event):
        # gone, or it will not change again (matched and applied): whom it was told to is done
        ops += [(DB, told, None) for told in told_keys]
    if project is None or stored is None or event is None:
        return ops
    ops.append(
        expect_op("records", keys.record(owed.project_id, keys.EVENT, owed.event_id), stored)
    )
    for endpoint in takers(project, event):
        if endpoint["id"] not in had:
            ops += enqueue_ops(
                project["id"], endpoint["id"], event, endpoint["mode"], now_ms, fanned_out=True
            )
    return ops


async def told_pruned_ops(store: Engine, event_id: str) -> list[Op]:
    """The deletes of an event's ``u`` keys (with the event itself)."""
    return [(DB, key, None) for key, _ in await store.scan(_told(event_id), db=DB)]


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
