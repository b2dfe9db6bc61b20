"""Asking PayPal (CONTRACT 4.3a): what became of a transaction, when its webhooks never came.

``sync`` reads the objects the node made and PayPal linked to them, and answers the events their
webhooks would have given, each named by the object and the state it was seen in (the dedup ids
of ``events``: the same a webhook of that change carries, so asking twice, or a webhook after
asking, stores nothing twice), with the same ``change`` as the webhook:

- a payment: the order (``GET /v2/checkout/orders/{id}``, checkout_orders_v2.json ``order``:
  ``CREATED``, ``PAYER_ACTION_REQUIRED``, ``APPROVED``, ``VOIDED``, ``COMPLETED``). Approved and
  not captured, it is ``CHECKOUT.ORDER.APPROVED`` again, with the capture the node owes (a lost
  webhook still gets the payment captured); voided, it failed
  (``CHECKOUT.PAYMENT-APPROVAL.REVERSED``); each capture is its outcome (``capture:{id}:
  {status}``, a capture refunded since was completed first); each refund the order shows is
  ``PAYMENT.CAPTURE.REFUNDED`` (read in full where the order's copy lacks its tag:
  ``refunds.full_refunds``); and each dispute of a capture (``GET /v1/customer/disputes?
  disputed_transaction_id=``, then ``GET /v1/customer/disputes/{id}``: the list shows a
  summary without the stage or the outcome, customer_disputes_v1.json ``dispute_info``) is what
  it is now (``events.dispute_state``). A dispute found resolved after a claim is both its
  opening and its closing, so the closing does not wait for an opening the node never heard.
- a subscription: ``GET /v1/billing/subscriptions/{id}`` (its status, as the status webhooks
  give it) and its transactions (``GET /v1/billing/subscriptions/{id}/transactions``,
  billing_subscriptions_v1.json ``transactions_list``): each completed one is the
  ``PAYMENT.SALE.COMPLETED`` of a renewal, named by its id. **Not verified**: that a
  subscription transaction's ``id`` is the id of the sale its webhook carries (both are "the
  PayPal-generated transaction ID"); if they differ, a renewal learned both ways is told twice.

``found`` is False when PayPal answers 404 ``RESOURCE_NOT_FOUND`` for the object the node made.

``list_events`` pages through ``GET /v1/notifications/webhooks-events`` (notifications_webhooks_v1
.json ``EventList``: ``start_time``, ``end_time``, ``page_size``), following the ``next`` link
(``move_to=next&index_time=&index_id=``, the shape of
paypal/PayPal-PHP-SDK@d50d980c:tests/PayPal/Test/Functional/resources/WebhookFunctionalTest/
testEventSearch.json); each event is handed back as the bytes ``events.normalize`` reads, so an
event also delivered as a webhook is a duplicate by its id. PayPal documents no largest
``page_size``; ``PAGE_SIZE`` is a guess kept small.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode, urlsplit

from edge.providers import calls
from edge.providers.base import (
    EventsPage,
    EventsRequest,
    NormalizedEvent,
    SyncRequest,
    SyncResult,
)
from edge.providers.calls import Answer
from edge.providers.paypal import api, events, refunds
from edge.providers.reading import mapping, refs, string

EVENTS_PATH = "/v1/notifications/webhooks-events"
PAGE_SIZE = 50
DISPUTES_PAGE = 50  # customer_disputes_v1.json ``page_size`` maximum
# the subscription status PayPal reports and the webhook that reports it
_SUBSCRIPTION_EVENTS: Mapping[str, str] = {
    "ACTIVE": "BILLING.SUBSCRIPTION.ACTIVATED",
    "SUSPENDED": "BILLING.SUBSCRIPTION.SUSPENDED",
    "CANCELLED": "BILLING.SUBSCRIPTION.CANCELLED",
    "EXPIRED": "BILLING.SUBSCRIPTION.EXPIRED",
}
_WAS_COMPLETED = frozenset({"COMPLETED", "PARTIALLY_REFUNDED", "REFUNDED"})


async def sync(request: SyncRequest) -> SyncResult:
    """What PayPal's objects for the transaction say, as events (the module docstring)."""
    if request.tx["kind"] == "subscription":
        return await _sync_subscription(request)
    return await _sync_order(request)


async def list_events(request: EventsRequest) -> EventsPage:
    """One page of the events PayPal kept since ``since_ms``, newest or oldest first as PayPal
    lists them; ``cursor`` the next page's address (its path and query), None after the last."""
    path = request.cursor or _first_page(request.since_ms, request.until_ms)
    if not _is_events_page(path):
        raise calls.provider_error("That is not a page of PayPal's event list.", retryable=False)
    answer = await api.call(request.http, request.credentials, request.mode == "test", "GET", path)
    if not answer.ok:
        raise api.refused(answer, request.credentials)
    listed = answer.body.get("events")
    bodies = tuple(
        json.dumps(event).encode()
        for event in (listed if isinstance(listed, list) else ())
        if isinstance(event, dict)
    )
    following = _page_of(api.link(answer.body, "next"))
    return EventsPage(bodies=bodies, cursor=following if following != path else None)


# --- a payment: its order, captures, refunds and disputes ---------------------------------


async def _sync_order(request: SyncRequest) -> SyncResult:
    tx, http, credentials = request.tx, request.http, request.credentials
    test = bool(tx["isTest"])
    order_id = api.object_id(tx.get("providerRef"))
    if order_id is None:
        return SyncResult(found=False, detail="no PayPal order was made for this checkout")
    answer = await refunds.read_order(http, credentials, test, order_id)
    if _not_found(answer):
        return SyncResult(found=False, body=answer.raw, detail=f"PayPal has no order {order_id}")
    if not answer.ok:
        raise api.refused(answer, credentials)
    order = answer.body
    read: dict[str, Any] = {"order": order}
    found = _order_events(order)
    read["refunds"] = made = await refunds.full_refunds(http, credentials, test, order)
    found += [_refund_event(refund) for refund in made if refund.get("id")]
    read["disputes"] = disputes = await _disputes(request, order)
    for dispute in disputes:
        found += _dispute_events(dispute)
    linked = refs(order_id)
    return SyncResult(
        found=True,
        # every event names the order the node made, which it is matched by
        events=tuple(replace(e, refs=refs(*e.refs, *linked)) for e in found),
        refunds=tuple(r for r in map(events.provider_refund, made) if r is not None),
        body=json.dumps(read).encode(),
        detail=f"order {order.get('status')}",
    )


def _order_events(order: Mapping[str, Any]) -> list[NormalizedEvent]:
    """What the order and its captures say (not its refunds nor disputes)."""
    status, order_id = order.get("status"), string(order, "id")
    captured = events.captures(order)
    found: list[NormalizedEvent] = []
    at = events.time_ms(order.get("update_time") or order.get("create_time"))
    if order_id is None:
        return []
    if status == "APPROVED" and not captured:
        found.append(
            events.resource_event(
                "CHECKOUT.ORDER.APPROVED",
                order,
                occurred_at_ms=at,
                provider_type="order APPROVED (read)",
            )
        )
    elif status == "VOIDED" and not captured:
        found.append(
            events.resource_event(
                "CHECKOUT.PAYMENT-APPROVAL.REVERSED",
                order,
                event_id=f"order:{order_id}:VOIDED",
                occurred_at_ms=at,
                provider_type="order VOIDED (read)",
            )
        )
    for capture in captured:
        outcome = events.capture_outcome(order, capture, "capture (read)")
        if outcome is not None:
            found.append(outcome)
    return found


def _refund_event(refund: Mapping[str, Any]) -> NormalizedEvent:
    return events.resource_event(
        "PAYMENT.CAPTURE.REFUNDED",
        refund,
        occurred_at_ms=events.time_ms(refund.get("update_time") or refund.get("create_time")),
        provider_type=f"refund {refund.get('status')} (read)",
    )


async def _disputes(request: SyncRequest, order: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The disputes of the order's captures, each in full. An app PayPal does not let read
    disputes (the Disputes feature is off: 401/403) has none to tell."""
    http, credentials, test = request.http, request.credentials, bool(request.tx["isTest"])
    found: list[Mapping[str, Any]] = []
    for capture in events.captures(order):
        capture_id = api.object_id(capture.get("id"))
        if capture_id is None:
            continue
        query = urlencode({"disputed_transaction_id": capture_id, "page_size": DISPUTES_PAGE})
        listed = await api.call(http, credentials, test, "GET", f"/v1/customer/disputes?{query}")
        if listed.status in (401, 403):
            return []
        if not listed.ok:
            raise api.refused(listed, credentials)
        items = listed.body.get("items")
        for item in items if isinstance(items, list) else ():
            dispute_id = api.object_id(item.get("dispute_id") if isinstance(item, dict) else None)
            if dispute_id is None:
                continue
            shown = await api.call(
                http, credentials, test, "GET", f"/v1/customer/disputes/{dispute_id}"
            )
            if not shown.ok:
                raise api.refused(shown, credentials)
            found.append(shown.body)
    return found


def _dispute_events(dispute: Mapping[str, Any]) -> list[NormalizedEvent]:
    """What a dispute read now says: its state; resolved after a claim, its opening too."""
    state = events.dispute_state(dispute)
    if not state or not string(dispute, "dispute_id"):
        return []
    opened = events.time_ms(dispute.get("create_time"))
    now = events.time_ms(dispute.get("update_time")) or opened
    found: list[NormalizedEvent] = []
    if state in (events.WON, events.LOST):
        claim = {k: v for k, v in dispute.items() if k != "dispute_outcome"}
        claim["status"] = "UNDER_REVIEW"
        found.append(_dispute_event(claim, opened))
    found.append(_dispute_event(dispute, now if state != events.INQUIRY else opened))
    return found


def _dispute_event(dispute: Mapping[str, Any], at: int | None) -> NormalizedEvent:
    state = events.dispute_state(dispute)
    return events.resource_event(
        "CUSTOMER.DISPUTE.UPDATED",
        dispute,
        occurred_at_ms=at,
        provider_type=f"dispute {state} (read)",
    )


# --- a subscription: its status and its transactions -----------------------------------


async def _sync_subscription(request: SyncRequest) -> SyncResult:
    tx, http, credentials = request.tx, request.http, request.credentials
    test = bool(tx["isTest"])
    held = (request.subscription or {}).get("providerRef") or tx.get("providerRef")
    sub_id = api.object_id(held)
    if sub_id is None:
        return SyncResult(found=False, detail="no PayPal subscription was made for this checkout")
    path = f"/v1/billing/subscriptions/{sub_id}"
    answer = await api.call(http, credentials, test, "GET", path)
    if _not_found(answer):
        return SyncResult(
            found=False, body=answer.raw, detail=f"PayPal has no subscription {sub_id}"
        )
    if not answer.ok:
        raise api.refused(answer, credentials)
    subscription = answer.body
    found: list[NormalizedEvent] = []
    status = string(subscription, "status") or ""
    said = _SUBSCRIPTION_EVENTS.get(status)
    if said is not None:
        changed = subscription.get("status_update_time")
        found.append(
            events.resource_event(
                said,
                subscription,
                event_id=f"subscription:{sub_id}:{status}:{changed or ''}",
                occurred_at_ms=events.time_ms(changed),
                provider_type=f"subscription {status} (read)",
            )
        )
    since = events.time_ms(subscription.get("create_time")) or int(tx["createdAt"])
    query = urlencode({"start_time": _iso(since - 86_400_000), "end_time": _iso(None)})
    listed = await api.call(http, credentials, test, "GET", f"{path}/transactions?{query}")
    if not listed.ok:
        raise api.refused(listed, credentials)
    paid = listed.body.get("transactions")
    for item in paid if isinstance(paid, list) else ():
        if isinstance(item, dict) and item.get("status") in _WAS_COMPLETED and item.get("id"):
            found.append(_sale_event(sub_id, subscription, item))
    return SyncResult(
        found=True,
        events=tuple(found),
        body=json.dumps({"subscription": subscription, "transactions": listed.body}).encode(),
        detail=f"subscription {status}",
    )


def _sale_event(
    sub_id: str, subscription: Mapping[str, Any], item: Mapping[str, Any]
) -> NormalizedEvent:
    """A subscription transaction as the ``PAYMENT.SALE.COMPLETED`` of its sale (a v1 sale
    names its amount ``{total, currency}``)."""
    gross = mapping(mapping(item, "amount_with_breakdown"), "gross_amount")
    sale: dict[str, Any] = {
        "id": item["id"],
        "state": "completed",
        "billing_agreement_id": sub_id,
        "amount": {"total": gross.get("value"), "currency": gross.get("currency_code")},
    }
    if subscription.get("custom_id"):
        sale["custom"] = subscription["custom_id"]
    return events.resource_event(
        "PAYMENT.SALE.COMPLETED",
        sale,
        occurred_at_ms=events.time_ms(item.get("time")),
        provider_type="subscription transaction COMPLETED (read)",
    )


# --- PayPal's answers --------------------------------------------------------------------


def _not_found(answer: Answer) -> bool:
    return answer.status == 404 and answer.body.get("name") == "RESOURCE_NOT_FOUND"


def _first_page(since_ms: int, until_ms: int | None) -> str:
    query = {"start_time": _iso(since_ms), "end_time": _iso(until_ms), "page_size": PAGE_SIZE}
    return f"{EVENTS_PATH}?{urlencode(query)}"


def _page_of(href: str | None) -> str | None:
    """The path and query of a ``next`` link (the API base is the node's own, never the
    link's host)."""
    if href is None:
        return None
    parts = urlsplit(href)
    page = f"{parts.path}?{parts.query}" if parts.query else parts.path
    return page if _is_events_page(page) else None


def _is_events_page(page: str) -> bool:
    path = page.partition("?")[0]
    return path.rstrip("/") == EVENTS_PATH


def _iso(ms: int | None) -> str:
    """A time as PayPal's queries take it (RFC 3339, UTC); now when ``ms`` is None."""
    moment = datetime.now(UTC) if ms is None else datetime.fromtimestamp(ms / 1000, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
