"""The durable follow-up queue (the outbox): work the node owes a provider after a commit.

An entry is written in the same commit as the event that causes it (``enqueue_ops``), so a
crash can lose the event and its follow-up together or neither. A worker
(``edge.actors.followups``) takes due entries, attempts them, and records every attempt; nothing
owed is kept only in memory, so a restarted node resumes where the last one stopped.

Keys of the ``outbox`` database:

- ``e | entry id`` -> the entry: project, transaction, provider, mode, action, params, state
  (``pending``, ``done``, ``failed``, ``dropped``), attempts so far, when it is next due.
- ``q | due ms (8 bytes, big-endian) | entry id`` -> b"": pending entries, soonest first.
- ``a | entry id | attempt number (4 bytes, big-endian)`` -> one attempt: when, how long,
  outcome (``done``, ``retry``, ``failed``, ``dropped``) and what the provider said.

Entry ids are ULIDs; attempts follow their entry in key order, so one prefix scan lists them.
A finished entry (done, failed or dropped) is kept with its attempts for ``RETENTION_MS`` after
it was made, then pruned (``expired_ops``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from edge.domain import ids
from edge.domain.ids import ulid_time_ms
from edge.store.codec import pack, unpack
from edge.store.engine import Engine, Op, expect_op

DB = "outbox"
ENTRY = b"e"
QUEUE = b"q"
ATTEMPT = b"a"

# The node's own actions, carried out by the worker without a provider call.
EXPIRE = "node.expire"  # a checkout its provider never expires: expire it at its expiresAt
# an ``EXPIRE`` param: the checkout's provider answer is due by then, or it ends unanswered
UNANSWERED = "unanswered"
SYNC = "node.sync"  # a checkout still open with no webhook: ask its provider (edge.actors.sync)
# a provider account whose webhooks do not reach the node: walk its lists (edge.actors.sync)
RECONCILE = "node.reconcile"

RETENTION_MS = 30 * 24 * 3600 * 1000
PRUNE_BATCH = 500
NEXT_DUE_SCAN = 50  # queue keys read for the next due time, strays passed over

PENDING = "pending"
DONE = "done"
FAILED = "failed"
DROPPED = "dropped"


def entry_key(entry_id: str) -> bytes:
    return ENTRY + entry_id.encode("ascii")


def queue_key(due_ms: int, entry_id: str) -> bytes:
    return QUEUE + max(0, due_ms).to_bytes(8, "big") + entry_id.encode("ascii")


def _queued(key: bytes) -> tuple[int, str]:
    """A queue key's due time and entry id."""
    return int.from_bytes(key[1:9], "big"), key[9:].decode("ascii")


def attempt_key(entry_id: str, number: int) -> bytes:
    return ATTEMPT + entry_id.encode("ascii") + number.to_bytes(4, "big")


def enqueue_ops(
    project_id: str,
    tx_id: str,
    provider: str,
    mode: str,
    action: str,
    params: Mapping[str, Any],
    now_ms: int,
    due_ms: int | None = None,
    db: str = DB,
) -> list[Op]:
    """The writes that owe the provider's ``action``, due at once (or at ``due_ms``): commit
    them with the event."""
    due_ms = now_ms if due_ms is None else due_ms
    entry_id = ids.new_ulid()
    entry = {
        "id": entry_id,
        "projectId": project_id,
        "txId": tx_id,
        "provider": provider,
        "mode": mode,
        "action": action,
        "params": dict(params),
        "state": PENDING,
        "attempts": 0,
        "dueAt": due_ms,
        "createdAt": now_ms,
        "detail": "",
    }
    return [
        (db, entry_key(entry_id), pack(entry)),
        (db, queue_key(due_ms, entry_id), b""),
    ]


def entry_id_of(ops: list[Op]) -> str:
    """The id of the entry that ``enqueue_ops`` made."""
    return ops[0][1][len(ENTRY) :].decode("ascii")


async def due(store: Engine, now_ms: int, limit: int, db: str = DB) -> list[dict[str, Any]]:
    """Pending entries due at ``now_ms`` or before, soonest first."""
    out = []
    for key, _ in await store.scan(QUEUE, limit=limit, db=db):
        due_ms, entry_id = _queued(key)
        if due_ms > now_ms:
            break
        entry = await store.get(entry_key(entry_id), db=db)
        if entry is not None and entry["state"] == PENDING:
            out.append(entry)
    return out


async def next_due_ms(store: Engine, db: str = DB) -> int | None:
    """When the soonest pending entry is due, or None when nothing is pending. A queue key
    whose entry is gone, finished or due at another time (a stray: ``strays_ops``) is passed
    over: due in the past for ever, it would have a worker look again without pause."""
    rows = await store.scan(QUEUE, limit=NEXT_DUE_SCAN, db=db)
    for key, _ in rows:
        due_ms, entry_id = _queued(key)
        if not _stray(await store.get(entry_key(entry_id), db=db), due_ms):
            return due_ms
    return None if len(rows) < NEXT_DUE_SCAN else _queued(rows[-1][0])[0]


def _stray(entry: Mapping[str, Any] | None, due_ms: int) -> bool:
    return entry is None or entry["state"] != PENDING or entry["dueAt"] != due_ms


async def strays_ops(store: Engine, db: str = DB, batch: int = PRUNE_BATCH) -> list[list[Op]]:
    """The deletes of stray queue keys among the ``batch`` soonest, each with its guard (the
    entry as read: one settled or taken meanwhile keeps its key): a ticket each."""
    tickets = []
    for key, _ in await store.scan(QUEUE, limit=batch, db=db):
        due_ms, entry_id = _queued(key)
        raw = await store.get_raw(entry_key(entry_id), db=db)
        if _stray(unpack(raw) if raw is not None else None, due_ms):
            tickets.append([expect_op(db, entry_key(entry_id), raw), (db, key, None)])
    return tickets


async def entry(store: Engine, entry_id: str, db: str = DB) -> dict[str, Any] | None:
    return await store.get(entry_key(entry_id), db=db)


async def attempts(store: Engine, entry_id: str, db: str = DB) -> list[dict[str, Any]]:
    """Every attempt of an entry, first first."""
    prefix = ATTEMPT + entry_id.encode("ascii")
    return [unpack(value) for _, value in await store.scan(prefix, db=db)]


def claim_ops(
    entry: Mapping[str, Any], raw: bytes, until_ms: int, db: str = DB
) -> tuple[dict[str, Any], bytes, list[Op]]:
    """The writes that take ``entry`` (stored as ``raw``) for one attempt until ``until_ms``,
    the entry as taken, and its bytes. Where a provider honours no idempotency key, two
    attempts of one refund under way at once would both find nothing made and both make it:
    taken, the entry is due to no one else until the attempt has had its time, a second
    taker's commit fails (``Contended``: it read the entry before this one took it), and
    ``begun`` counts the attempts that may have reached the provider, one a crash cut short
    included."""
    entry_id = entry["id"]
    taken = {**entry, "dueAt": until_ms, "begun": begun(entry) + 1}
    packed = pack(taken)
    return (
        taken,
        packed,
        [
            expect_op(db, entry_key(entry_id), raw),
            (db, queue_key(entry["dueAt"], entry_id), None),
            (db, queue_key(until_ms, entry_id), b""),
            (db, entry_key(entry_id), packed),
        ],
    )


def as_read(current: Mapping[str, Any], read: Mapping[str, Any], now_ms: int) -> bool:
    """The entry, as stored now (``current``), is still as it was ``read``: pending, with no
    attempt recorded since, and due (not taken by another attempt meanwhile)."""
    return (
        current["state"] == PENDING
        and current["attempts"] == read["attempts"]
        and current["dueAt"] <= now_ms
    )


def begun(entry: Mapping[str, Any]) -> int:
    """How many attempts at ``entry`` began, recorded or not (one a crash cut short)."""
    return max(int(entry["attempts"]), int(entry.get("begun", 0)))


def settle_ops(
    entry: Mapping[str, Any],
    attempt: Mapping[str, Any],
    *,
    state: str,
    due_ms: int | None = None,
    detail: str = "",
    db: str = DB,
    taken: bytes | None = None,
) -> list[Op]:
    """The writes that record ``attempt`` and move the entry to ``state`` (``pending`` again
    with ``due_ms`` for a retry). ``taken``: the entry as ``claim_ops`` wrote it, and the
    writes hold only while it still is (another node may have taken it once its time ran
    out: that attempt's outcome is the one recorded)."""
    entry_id = entry["id"]
    number = entry["attempts"] + 1
    updated = {**entry, "state": state, "attempts": number, "detail": detail}
    ops: list[Op] = [] if taken is None else [expect_op(db, entry_key(entry_id), taken)]
    ops += [
        (db, attempt_key(entry_id, number), pack({**attempt, "number": number})),
        (db, queue_key(entry["dueAt"], entry_id), None),
    ]
    if state == PENDING:
        assert due_ms is not None, "a retried entry needs its next time"
        updated["dueAt"] = due_ms
        ops.append((db, queue_key(due_ms, entry_id), b""))
    ops.append((db, entry_key(entry_id), pack(updated)))
    return ops


async def expired_ops(
    store: Engine, now_ms: int, db: str = DB, batch: int = PRUNE_BATCH
) -> list[Op]:
    """Deletes for the finished entries made more than ``RETENTION_MS`` ago, with their
    attempts: of the ``batch`` oldest entries. A pending one (still owed) is kept, whatever
    its age."""
    cutoff = now_ms - RETENTION_MS
    ops: list[Op] = []
    for key, raw in await store.scan(ENTRY, limit=batch, db=db):
        entry_id = key[len(ENTRY) :]
        if ulid_time_ms(entry_id.decode("ascii")) >= cutoff:
            break
        if unpack(raw)["state"] == PENDING:
            continue
        ops.append((db, key, None))
        ops += [(db, attempt, None) for attempt, _ in await store.scan(ATTEMPT + entry_id, db=db)]
    return ops
