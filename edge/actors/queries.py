"""Reads of committed data that need no actor: transaction lists, one transaction with its
history, the event feed, refused deliveries, an endpoint's attempts, the node's counters, and
creating a project (a new id has no actor yet). The HTTP layer reads through here and never
opens the store itself.

They read only what the writer has committed, so they can never show anything not durable.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import trio

from edge.actors.context import NodeContext
from edge.actors.project import refunds, story
from edge.actors.records import event_view, transaction_view
from edge.actors.views import project_view
from edge.domain import ids
from edge.domain import refunds as money_back
from edge.domain.money import to_wire
from edge.domain.timefmt import iso_ms
from edge.errors import Conflict, tx_not_found
from edge.providers.registry import PROVIDERS
from edge.store import accounts, keys, notifyq, outbox
from edge.store.codec import pack, unpack
from edge.store.engine import Engine, Op


async def list_projects(
    ctx: NodeContext, *, after: str | None = None, limit: int = 50, owner: str | None = None
) -> dict[str, Any]:
    """Every project on the node (or ``owner``'s only), in id order; ``next`` is the
    ``after`` of the following page (None at the end)."""
    store = ctx.store
    if owner is None:
        start = after.encode("ascii") if after else None
        found = [
            h.decode("ascii")
            for h in await store.heads(keys.PROJECT_ID_LEN, after=start, limit=limit + 1)
        ]
    else:
        owned = await accounts.owned_projects(store, owner)
        found = [p for p in owned if after is None or p > after]
        found = found[: limit + 1]
    items = []
    for project_id in found[:limit]:
        record = await store.get(keys.project(project_id))
        if record is not None:  # a head of records with no project: never shown
            items.append(project_view(record))
    more = len(found) > limit
    return {"items": items, "next": found[limit - 1] if more else None}


async def project_exists(ctx: NodeContext, project_id: str) -> bool:
    return await ctx.store.get_raw(keys.project(project_id)) is not None


def _mode_matches(record: dict[str, Any], mode: str | None) -> bool:
    return mode is None or record["isTest"] == (mode == "test")


async def project_of_tx(ctx: NodeContext, tx_id: str) -> str | None:
    if not ids.is_tx_id(tx_id):
        return None
    raw = await ctx.store.get_raw(keys.tx_owner(tx_id), db="meta")
    return raw.decode() if raw else None


SCAN_BUDGET = 5000  # rows one request may read: a sparse filter pages on instead of stalling


async def _filtered_page(
    store: Engine,
    prefix: bytes,
    after: bytes | None,
    *,
    reverse: bool,
    limit: int,
    keep: Callable[[dict[str, Any]], dict[str, Any] | None],
) -> tuple[list[dict[str, Any]], bytes | None, bool]:
    """Up to ``limit`` rows that ``keep`` renders, reading at most SCAN_BUDGET rows past
    ``after``. Returns them, the last key read (the cursor to go on from) and whether more may
    follow."""
    items: list[dict[str, Any]] = []
    cursor, scanned = after, 0
    while scanned < SCAN_BUDGET:
        if scanned:  # LMDB's reads never give way: other tasks run between the pages
            await trio.lowlevel.checkpoint()
        page = await store.scan(
            prefix, after=cursor, reverse=reverse, limit=min(500, SCAN_BUDGET - scanned)
        )
        if not page:
            return items, cursor, False
        for key, raw in page:
            cursor, scanned = key, scanned + 1
            view = keep(unpack(raw))
            if view is not None:
                items.append(view)
                if len(items) == limit:
                    return items, cursor, True
    return items, cursor, True


async def list_transactions(
    ctx: NodeContext,
    project_id: str,
    *,
    mode: str | None,
    status: str | None = None,
    after: str | None = None,
    reference: str | None = None,
    limit: int = 50,
) -> dict[str, Any]:
    """Newest first; ``next`` is the ``after`` of the following page (None at the end)."""
    store = ctx.store
    if reference is not None:
        raw = await store.get_raw(keys.named(project_id, keys.REFERENCE, "", reference))
        found = (
            await store.get(keys.record(project_id, keys.TRANSACTION, raw.decode()))
            if raw
            else None
        )
        items = [found] if found and _mode_matches(found, mode) else []
        return {"items": [transaction_view(tx) for tx in items], "next": None}

    def keep(tx: dict[str, Any]) -> dict[str, Any] | None:
        wanted = _mode_matches(tx, mode) and (status is None or tx["status"] == status)
        return transaction_view(tx) if wanted else None

    cursor = keys.record(project_id, keys.TRANSACTION, after) if after else None
    items, last, more = await _filtered_page(
        store,
        keys.prefix(project_id, keys.TRANSACTION),
        cursor,
        reverse=True,
        limit=limit,
        keep=keep,
    )
    return {"items": items, "next": keys.item_id(last) if more and last else None}


async def get_transaction(
    ctx: NodeContext, project_id: str, tx_id: str, mode: str | None
) -> dict[str, Any]:
    store = ctx.store
    tx = (
        await store.get(keys.record(project_id, keys.TRANSACTION, tx_id))
        if ids.is_tx_id(tx_id)
        else None
    )
    if tx is None or not _mode_matches(tx, mode):
        raise tx_not_found()
    view = transaction_view(tx)
    for refund, shown in zip(tx.get("refunds") or (), view["refunds"], strict=True):
        shown.update(await _refund_progress(store, refund))
    view.update(_money_back(tx))
    history_prefix = keys.history(project_id, tx_id)
    events = []
    for key, _ in await store.scan(history_prefix):
        evt_id = key[len(history_prefix) :].decode()
        event = await store.get(keys.record(project_id, keys.EVENT, evt_id))
        if event is not None:
            events.append(event_view(event))
    view["events"] = events
    return view


async def event_feed(
    ctx: NodeContext, project_id: str, *, mode: str | None, after: str | None, limit: int = 100
) -> dict[str, Any]:
    """Oldest first from ``after``: a merchant catching up after an outage pages forward with
    ``next`` while ``hasMore``."""
    store = ctx.store
    cursor = keys.record(project_id, keys.EVENT, after) if after else None
    items, last, more = await _filtered_page(
        store,
        keys.prefix(project_id, keys.EVENT),
        cursor,
        reverse=False,
        limit=limit,
        keep=lambda event: event_view(event) if _mode_matches(event, mode) else None,
    )
    return {"items": items, "next": keys.item_id(last) if last else after, "hasMore": more}


async def rejected_deliveries(
    ctx: NodeContext, project_id: str, limit: int = 100
) -> dict[str, Any]:
    """Refused webhook deliveries, newest first, with the reason each was refused."""
    store = ctx.store
    rows = await store.scan(keys.prefix(project_id, keys.REJECTED), reverse=True, limit=limit)
    items = []
    for _, raw in rows:
        record = unpack(raw)
        items.append(
            {
                "at": iso_ms(record["at"]),
                "provider": record["provider"],
                "code": record["code"],
                "reason": record["reason"],
                "detail": record.get("detail") or "",
                "bodySha256": record["bodySha256"],
                "bodyBytes": record["bodyBytes"],
            }
        )
    return {"items": items}


async def endpoint_attempts(ctx: NodeContext, endpoint_id: str) -> list[dict[str, Any]]:
    """The endpoint's recent notification attempts, newest first."""
    return await notifyq.log(ctx.store, endpoint_id)


def node_stats(ctx: NodeContext) -> dict[str, Any]:
    """The writer's and the actors' counters, for the operator (``edge stats``)."""
    writer = ctx.writer.stats
    return {
        "commits": writer.commits,
        "ticketsCommitted": writer.tickets,
        "ticketsPerCommit": round(writer.tickets_per_commit(), 2),
        "commitFailures": writer.failures,
        "commitMs": round(writer.commit_ms(), 3),
        "commitRoundTripMs": round(writer.round_trip_ms(), 3),
        "actors": len(ctx.registry),
        "actorRestarts": ctx.registry.restarts,
    }


async def create_project(
    ctx: NodeContext, fields: dict[str, Any], owner: str | None = None
) -> dict[str, Any]:
    """A new project; ``owner``: the account it belongs to (None: the operator's)."""
    now = ctx.clock_ms()
    while True:
        project_id = ids.new_project_id()
        if await ctx.store.get_raw(keys.project(project_id)) is None:
            break
    record = {
        "id": project_id,
        **fields,
        "createdAt": now,
        "updatedAt": now,
        "products": {},
        "providers": {},
        "keys": {},
    }
    if owner is not None:
        record["accountId"] = owner
    ops: list[Op] = [("records", keys.project(project_id), pack(record))]
    if owner is not None:
        ops += accounts.ownership_ops(owner, project_id)
    # cluster mode: the record is written under a lease, given back at once: the node that
    # HAProxy sends the project's requests to takes it up with the first of them
    ownership = ctx.ownership
    ops += ownership.fence(project_id, await ownership.take(project_id))
    try:
        await ctx.writer.write(ops)
    finally:
        await ownership.give_back(project_id)
    return project_view(record)


async def _refund_progress(store: Engine, refund: dict[str, Any]) -> dict[str, Any]:
    """Where a refund stands that a node from before refund states recorded only as
    ``requested``: read off its outbox entry while it has heard nothing more."""
    if refund.get("state") not in (None, money_back.REQUESTED) or not refund.get("entryId"):
        return {}
    entry = await outbox.entry(store, refund["entryId"])
    if entry is None or entry["state"] == outbox.PENDING:
        return {}
    state = money_back.SENT if entry["state"] == outbox.DONE else money_back.FAILED
    return {"state": state, "detail": entry.get("detail") or None}


def _money_back(tx: dict[str, Any]) -> dict[str, Any]:
    """What the provider reports given back, each refund it names (whether the node asked for
    it or it was made in the provider's own dashboard), and what is left to refund."""
    reported = story.reported(tx)
    # a refund recorded by hand (pay by mail) is counted under the node's own id
    ours = {r.get("providerRefundId") or r["id"]: r["id"] for r in tx.get("refunds") or ()}
    currency = tx["currency"]
    left = refunds.refundable(tx)
    return {
        "refunded": to_wire(reported.given_back, currency),
        "refundable": None if left is None else to_wire(left, currency),
        "providerRefunds": [
            {
                "id": of,
                "amount": to_wire(amount, currency),
                "currency": currency,
                "refundId": ours.get(of),
            }
            for of, amount in sorted(reported.each.items())
        ],
    }


async def reconcilable(ctx: NodeContext, project_id: str, mode: str, only: str | None) -> list[str]:
    """The project's providers enabled with ``mode`` credentials whose events (or objects) the
    node can walk; ``only``: just that one (``reconcile_unsupported`` if it cannot be)."""
    project = await ctx.store.get(keys.project(project_id))
    configured = [
        name
        for name, config in ((project or {}).get("providers") or {}).items()
        if config.get("enabled") and config.get(mode)
    ]
    walkable = [name for name in configured if PROVIDERS[name].list_events is not None]
    if only is None:
        return walkable
    if only not in walkable:
        raise Conflict(
            "reconcile_unsupported",
            f"{only} is not enabled with {mode} credentials on this project, or keeps no list"
            " of events the node can walk.",
        )
    return [only]
