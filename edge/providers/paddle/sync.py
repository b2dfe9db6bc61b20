"""Asking Paddle what became of a checkout (CONTRACT 4.3a): ``sync`` reads its objects,
``list_events`` pages through Paddle's event stream.

``sync`` reads the checkout's transaction (``GET /transactions/{id}``), its adjustments
(``GET /adjustments?transaction_id=...``, every page) and the subscription it started (``GET
/subscriptions/{id}``), and answers the events the webhooks for what it finds would have given,
read by the same table (``events.read``):

- the transaction ``paid`` or ``completed``: ``payment.succeeded`` for its amount (and the
  subscription's start, once it names one); ``canceled``: ``checkout.canceled``; draft, ready,
  billed and past_due say nothing yet;
- each adjustment as its webhook reads it: an approved refund (``refunded``, by its amount), one
  rejected (``refund_failed``), a chargeback, its reversal, a warning. A refund still waiting
  for review, a credit and a warning's reversal are history only, so sync leaves them out (the
  refunds are in ``SyncResult.refunds``);
- the subscription: ``subscription.created`` when the node has no record of it, and its status
  when it is not the record's.

Each event's dedup id names the object and the state it was seen in (``sync:{id}:{status}``;
a subscription's also its ``updated_at``, since its status may come back), so asking twice
stores nothing twice; its change is the webhook's (an adjustment's id, a type that happens once),
so a webhook that comes after is a duplicate.

``list_events`` reads ``GET /events`` (openapi.yaml list-events: "a paginated list of events
that have occurred in the last 90 days"), newest first (``order_by=id[DESC]``, the default;
ids are time-ordered), 50 a page (the default; at most 200, but a page of transactions must
stay under the node's 1 MiB answer cap), only the types the node reads (``event_type``, a
comma-separated list: developer.paddle.com/changelog/2025/filter-events-by-type). Each event is
handed on as the bytes of its JSON: the same ``event_id`` a webhook carries, so the webhook and
the listed event deduplicate. Paging stops at the first event that occurred before ``since``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from edge.domain.events import EventType
from edge.providers.base import (
    EventsPage,
    EventsRequest,
    NormalizedEvent,
    SyncRequest,
    SyncResult,
)
from edge.providers.paddle import adjustments, events
from edge.providers.paddle.api import Account, data_object, error_code
from edge.providers.paddle.shapes import paddle_id, time_ms
from edge.providers.reading import string

EVENTS_PER_PAGE = "50"
ADJUSTMENTS_PER_PAGE = "50"  # per_page_adjustment_query: at most 50
# what a transaction's status says, as the webhook that reports it
TRANSACTION_TYPES: Mapping[str, str] = {
    "paid": "transaction.paid",
    "completed": "transaction.completed",
    "canceled": "transaction.canceled",
}
# a subscription's status, as the webhook that reports it (``subscription.updated`` reads the
# status from the entity)
SUBSCRIPTION_TYPES: Mapping[str, str] = {
    "active": "subscription.updated",
    "trialing": "subscription.trialing",
    "past_due": "subscription.past_due",
    "paused": "subscription.paused",
    "canceled": "subscription.canceled",
}
REVIEWED = frozenset({"approved", "rejected", "reversed"})  # a refund's status after review
# the types the node reads, asked of the event stream
LISTED_TYPES = ",".join(events.HANDLED_EVENT_TYPES)


async def sync(request: SyncRequest) -> SyncResult:
    """What Paddle holds for the checkout's transaction; ``found`` False when Paddle answers
    404 ``not_found`` (or the node has no Paddle transaction on record)."""
    tx = request.tx
    txn = str(tx.get("providerRef") or "")
    if not txn.startswith("txn_"):
        return SyncResult(found=False, detail="no Paddle transaction on record")
    account = Account.of(request.http, request.credentials, bool(tx["isTest"]))
    answer = await account.answer("GET", f"/transactions/{txn}")
    if answer.status == 404 and error_code(answer) == "not_found":
        return SyncResult(found=False, detail=f"Paddle does not know {txn}")
    if not answer.ok:
        raise account.refused(answer)
    transaction = data_object(answer)
    listed = await account.listing(
        "/adjustments", {"transaction_id": txn, "per_page": ADJUSTMENTS_PER_PAGE}
    )
    record = request.subscription
    sub_id = paddle_id(transaction, "subscription_id", "sub_") or _sub_ref(record)
    subscription = await _subscription(account, sub_id) if sub_id else None
    found = (
        *transaction_events(transaction),
        *adjustment_events(listed),
        *subscription_events(subscription, record),
    )
    read = {"transaction": transaction, "adjustments": listed, "subscription": subscription}
    return SyncResult(
        found=True,
        events=found,
        refunds=tuple(r for r in map(adjustments.provider_refund, listed) if r is not None),
        body=json.dumps(read, separators=(",", ":"), sort_keys=True).encode(),
        detail=f"Paddle has {txn} {transaction.get('status')}",
    )


async def list_events(request: EventsRequest) -> EventsPage:
    """One page of Paddle's event stream, newest first, back to ``since_ms``."""
    account = Account.of(request.http, request.credentials, request.mode == "test")
    params = {"order_by": "id[DESC]", "per_page": EVENTS_PER_PAGE, "event_type": LISTED_TYPES}
    page, after = await account.page("/events", params, request.cursor)
    bodies: list[bytes] = []
    reached = False
    for event in page:
        at = time_ms(event.get("occurred_at"))
        if at is not None and at < request.since_ms:
            reached = True  # older ones follow: the stream is read back to ``since``
            continue
        bodies.append(json.dumps(event, separators=(",", ":")).encode())
    return EventsPage(bodies=tuple(bodies), cursor=None if reached else after)


def transaction_events(transaction: Mapping[str, Any]) -> tuple[NormalizedEvent, ...]:
    """What the checkout's transaction says by its status (none while it is open)."""
    status = string(transaction, "status") or ""
    paddle_type = TRANSACTION_TYPES.get(status)
    txn = paddle_id(transaction, "id", "txn_")
    if paddle_type is None or txn is None:
        return ()
    at = time_ms(transaction.get("updated_at"))
    return _moving(events.read(paddle_type, transaction, (f"sync:{txn}:{status}",), at))


def adjustment_events(listed: list[dict[str, Any]]) -> tuple[NormalizedEvent, ...]:
    """What each adjustment says, as its webhook would have: ``adjustment.updated`` for a
    refund Paddle reviewed (the only adjustments Paddle updates), ``adjustment.created`` for
    the rest."""
    found: list[NormalizedEvent] = []
    for adjustment in listed:
        adj = paddle_id(adjustment, "id", "adj_")
        status = string(adjustment, "status") or ""
        if adj is None:
            continue
        reviewed = adjustments.is_refund(adjustment) and status in REVIEWED
        paddle_type = "adjustment.updated" if reviewed else "adjustment.created"
        # when its webhook's event happened: a review's is the update; any other's the
        # adjustment's making (Paddle moves ``updated_at`` on a chargeback it reverses, which
        # would put the dispute after its own closing)
        at = time_ms(adjustment.get("updated_at" if reviewed else "created_at"))
        found += _moving(events.read(paddle_type, adjustment, (f"sync:{adj}:{status}",), at))
    return tuple(found)


def subscription_events(
    subscription: Mapping[str, Any] | None, record: Mapping[str, Any] | None
) -> tuple[NormalizedEvent, ...]:
    """The subscription's start, when the node has no record of it, and its status, when it is
    not what the record (or a new record) holds."""
    if subscription is None:
        return ()
    sub = paddle_id(subscription, "id", "sub_")
    status = string(subscription, "status") or ""
    if sub is None or status not in SUBSCRIPTION_TYPES:
        return ()
    found: list[NormalizedEvent] = []
    if record is None:
        at = time_ms(subscription.get("created_at"))
        found.append(
            events.read("subscription.created", subscription, (f"sync:{sub}:created",), at)
        )
        # a new record starts trialing or active (``edge.domain.convergence``)
        held = "trialing" if status == "trialing" else "active"
    else:
        held = str(record.get("status") or "")
    if events.SUBSCRIPTION_STATUS[status] != held:
        updated = string(subscription, "updated_at") or ""
        at = time_ms(subscription.get("updated_at"))
        dedup = (f"sync:{sub}:{status}:{updated}",)
        found.append(events.read(SUBSCRIPTION_TYPES[status], subscription, dedup, at))
    return tuple(found)


async def _subscription(account: Account, sub_id: str) -> dict[str, Any] | None:
    """The subscription; None when Paddle does not know it (the transaction's own answer
    still stands)."""
    answer = await account.answer("GET", f"/subscriptions/{sub_id}")
    if answer.status == 404 and error_code(answer) == "not_found":
        return None
    if not answer.ok:
        raise account.refused(answer)
    return data_object(answer)


def _moving(event: NormalizedEvent) -> tuple[NormalizedEvent, ...]:
    """The event, unless it is history only (what a webhook would store and act on nothing)."""
    return () if event.type == EventType.UNMATCHED else (event,)


def _sub_ref(record: Mapping[str, Any] | None) -> str | None:
    ref = (record or {}).get("providerRef")
    return paddle_id({"id": ref}, "id", "sub_")
