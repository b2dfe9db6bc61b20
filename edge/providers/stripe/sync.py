"""Asking Stripe what became of a transaction, when its webhooks never came (CONTRACT 4.3a).

``sync`` reads the transaction's objects with Stripe's own API and answers the events a webhook
would have given for each state it sees, built as the webhook's event would be (a Stripe event
envelope around the object read, through ``events.normalize``), so each is matched, checked and
counted like one:

- the Checkout Session the node created, ``GET /v1/checkout/sessions/{id}`` with
  ``expand[]=payment_intent.latest_charge`` and, for a subscription, also
  ``expand[]=subscription.latest_invoice`` (docs.stripe.com/expand): complete and paid (or no
  payment required) is ``checkout.session.completed`` (``payment.succeeded``), complete and
  unpaid ``payment.processing`` (a bank debit under way) or, once its payment intent asks for a
  new payment method, ``checkout.session.async_payment_failed``; expired is
  ``checkout.session.expired``. A session Stripe does not know (404 ``resource_missing``) is
  ``found=False``.
- its payment's refunds (``GET /v1/refunds?payment_intent=``), each as its own refund event;
  disputes (``GET /v1/disputes?payment_intent=``), opened and, once decided, closed; early
  fraud warnings (``GET /v1/radar/early_fraud_warnings?payment_intent=``), with the amount of
  the charge they warn about (the warning states none). Lists are read to their end
  (``has_more``, ``starting_after``).
- the subscription it started: its status where it differs from the node's record, and its
  latest invoice when that is a renewal (the first invoice is the checkout's own payment,
  which the session tells).

Each event's id (its only dedup id) names the object and the state seen, ``sync:{id}:{state}``,
so asking twice stores nothing twice; its ``change`` is the webhook's for that change, so a
webhook that comes after is recognised as the same change. An event is stamped with the
object's own time where Stripe gives one (the charge's, the refund's, the dispute's, the
warning's, the invoice's payment) and otherwise left unstamped (the node stamps it when it
takes it: the state was seen then).

``list_events`` pages through ``GET /v1/events`` (the last 30 days: "List events, going back up
to 30 days", stripe-python 16.1.0 ``_event.py``), newest first, 100 a page, from
``created[gte]``; it keeps the types a webhook endpoint subscribed to
``events.HANDLED_EVENT_TYPES`` would have received, each re-serialized as the body
``normalize`` reads, so a webhook of the same event is a duplicate by its ``id``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from edge.providers import calls
from edge.providers.base import (
    REFUND_FAILED,
    EventsPage,
    EventsRequest,
    NormalizedEvent,
    SyncRequest,
    SyncResult,
)
from edge.providers.reading import integer, mapping, string
from edge.providers.stripe import api, events

SESSION_EXPANDED = ("payment_intent.latest_charge",)
SUBSCRIPTION_EXPANDED = ("subscription.latest_invoice",)
DECIDED = frozenset({"won", "lost", "warning_closed"})  # a dispute's closing statuses
EVENTS_PAGE = 100  # "Limit can range between 1 and 100" (EventListParams.limit)


async def sync(request: SyncRequest) -> SyncResult:
    """What Stripe holds for the transaction, as events (see the module's docstring)."""
    session_id = request.tx.get("providerRef")
    if not isinstance(session_id, str) or not session_id:
        return SyncResult(found=False, detail="The node holds no Stripe checkout for it.")
    answer = await _session(request, session_id)
    if not answer.ok:  # Stripe does not know it
        return SyncResult(
            found=False, body=answer.raw, detail=f"Stripe has no checkout session {session_id}."
        )
    session = answer.body
    listed = await _payment_objects(request, session)
    charge = mapping(mapping(session, "payment_intent"), "latest_charge")
    found = [
        *session_events(session),
        *(refund_event(o) for o in listed["refunds"]),
        *(e for o in listed["disputes"] for e in dispute_events(o)),
        *(warning_event(o, charge) for o in listed["early_fraud_warnings"]),
        *subscription_events(mapping(session, "subscription"), request.subscription),
    ]
    return SyncResult(
        found=True,
        events=tuple(found),
        refunds=tuple(r for o in listed["refunds"] if (r := events.read_refund(o)) is not None),
        body=json.dumps({"session": session, **listed}, sort_keys=True).encode(),
    )


async def _session(request: SyncRequest, session_id: str) -> calls.Answer:
    """Stripe's answer for the Checkout Session, its payment (and subscription) expanded: a
    JSON object, or 404 ``resource_missing`` (``ProviderError`` for any other refusal)."""
    expanded: tuple[str, ...] = SESSION_EXPANDED
    if request.tx.get("kind") == "subscription":
        expanded += SUBSCRIPTION_EXPANDED
    answer = await api.get_answer(
        request.http,
        request.credentials,
        f"/v1/checkout/sessions/{session_id}",
        {"expand": list(expanded)},
    )
    missing = answer.status == 404 and api.error_code(answer.json) == "resource_missing"
    if not answer.ok and not missing:
        raise api.refusal(request.credentials, answer)
    if answer.ok and not isinstance(answer.json, dict):
        raise calls.not_an_object(api.API)
    return answer


async def _payment_objects(
    request: SyncRequest, session: Mapping[str, Any]
) -> dict[str, list[dict[str, Any]]]:
    """The refunds, disputes and early fraud warnings of the session's payment intent (none
    while it has none)."""
    intent_id = events.object_id(session.get("payment_intent"))
    if intent_id is None:
        return {"refunds": [], "disputes": [], "early_fraud_warnings": []}
    by_intent = {"payment_intent": intent_id}
    http, credentials = request.http, request.credentials
    return {
        "refunds": await api.list_all(http, credentials, "/v1/refunds", by_intent),
        "disputes": await api.list_all(http, credentials, "/v1/disputes", by_intent),
        "early_fraud_warnings": await api.list_all(
            http, credentials, "/v1/radar/early_fraud_warnings", by_intent
        ),
    }


def session_events(session: Mapping[str, Any]) -> list[NormalizedEvent]:
    """The session's own state: paid, under way, failed after it completed, or expired."""
    status = session.get("status")
    intent = mapping(session, "payment_intent")
    if status == "expired":
        return [_event("checkout.session.expired", session, "expired", session.get("expires_at"))]
    if status != "complete":
        return []  # open: the buyer has not finished
    if session.get("payment_status") in ("paid", "no_payment_required"):
        return [_event("checkout.session.completed", session, "paid", _paid_at(session))]
    if intent.get("status") == "requires_payment_method" and intent.get("last_payment_error"):
        # a delayed payment that failed: its intent asks for another payment method
        # (docs.stripe.com/payments/paymentintents/lifecycle); not verified against Stripe
        return [_event("checkout.session.async_payment_failed", session, "failed", None)]
    return [_event("checkout.session.completed", session, "processing", None)]


def refund_event(refund: Mapping[str, Any]) -> NormalizedEvent:
    """One refund in its present status, as its ``refund.updated`` (or, failed,
    ``refund.failed``) would say; a failure is stamped when it is seen (its ``created`` is when
    the refund was made, not when it failed)."""
    failed = events.refund_state(refund) == REFUND_FAILED
    return _event(
        "refund.failed" if failed else "refund.updated",
        refund,
        string(refund, "status") or "pending",
        None if failed else refund.get("created"),
    )


def dispute_events(dispute: Mapping[str, Any]) -> list[NormalizedEvent]:
    """A dispute opened (``charge.dispute.created``) and, once decided,
    ``charge.dispute.closed``: both named by the dispute, as its webhooks are."""
    opened = _event("charge.dispute.created", dispute, "opened", dispute.get("created"))
    status = string(dispute, "status")
    if status not in DECIDED:
        return [opened]
    return [opened, _event("charge.dispute.closed", dispute, status or "", None)]


def warning_event(warning: Mapping[str, Any], charge: Mapping[str, Any]) -> NormalizedEvent:
    """An early fraud warning, with the amount of the charge it warns about (when that charge
    is the payment's latest, as read with the session)."""
    event = _event("radar.early_fraud_warning.created", warning, "warned", warning.get("created"))
    if events.object_id(warning.get("charge")) != string(charge, "id"):
        return event
    stated = events.money_of(charge, "amount")
    return replace(
        event,
        amount_minor=stated["amount"],
        currency=stated["currency"],
        unreadable_amount=stated["unreadable"],
    )


def subscription_events(
    subscription: Mapping[str, Any], record: Mapping[str, Any] | None
) -> list[NormalizedEvent]:
    """The subscription's status where the node's record says otherwise, and its latest
    invoice when it renews it (paid, or a failed attempt)."""
    if not subscription:
        return []
    found: list[NormalizedEvent] = []
    status = string(subscription, "status") or ""
    ours = events.SUBSCRIPTION_STATUS.get(status)
    if record is not None and ours is not None and record.get("status") != ours:
        invoice_id = events.object_id(subscription.get("latest_invoice")) or "-"
        stripe_type = (
            "customer.subscription.deleted" if status == "canceled" else
            "customer.subscription.updated"
        )  # fmt: skip
        found.append(_event(stripe_type, subscription, f"{status}:{invoice_id}", None))
    invoice = mapping(subscription, "latest_invoice")
    if invoice and invoice.get("billing_reason") != "subscription_create":
        if invoice.get("status") == "paid":
            paid_at = mapping(invoice, "status_transitions").get("paid_at")
            found.append(_event("invoice.paid", invoice, "paid", paid_at))
        elif invoice.get("status") == "open" and invoice.get("attempted") is True:
            found.append(_event("invoice.payment_failed", invoice, "payment_failed", None))
    return found


async def list_events(request: EventsRequest) -> EventsPage:
    """One page of ``GET /v1/events`` since ``since_ms`` (whole seconds, inclusive): the
    handled types' events as bodies, and the cursor of the next page (the page's last event,
    for ``starting_after``) while Stripe says it has more."""
    query: dict[str, Any] = {
        "created": {"gte": request.since_ms // 1000},
        "limit": EVENTS_PAGE,
        "starting_after": request.cursor,
    }
    page = await api.get(request.http, request.credentials, "/v1/events", query)
    data = page.get("data")
    listed = [e for e in data if isinstance(e, dict)] if isinstance(data, list) else []
    bodies = tuple(
        json.dumps(e).encode() for e in listed if e.get("type") in events.HANDLED_EVENT_TYPES
    )
    last = string(listed[-1], "id") if listed else None
    more = page.get("has_more") is True and last is not None and last != request.cursor
    return EventsPage(bodies=bodies, cursor=last if more else None)


def _event(stripe_type: str, obj: Mapping[str, Any], state: str, at_s: Any) -> NormalizedEvent:
    """The event a webhook of ``stripe_type`` about ``obj`` would give, under the id
    ``sync:{object id}:{state}`` and stamped ``at_s`` (Stripe's seconds; None: unstamped)."""
    envelope: dict[str, Any] = {
        "id": f"sync:{string(obj, 'id') or '-'}:{state}",
        "object": "event",
        "type": stripe_type,
        "data": {"object": obj},
    }
    if isinstance(at_s, int) and not isinstance(at_s, bool):
        envelope["created"] = at_s
    return events.normalize(json.dumps(envelope).encode())


def _paid_at(session: Mapping[str, Any]) -> int | None:
    """When a session's payment was made: its charge's creation, or the payment of its
    subscription's first invoice while that is the latest."""
    charge = mapping(mapping(session, "payment_intent"), "latest_charge")
    if charge:
        return integer(charge, "created")
    invoice = mapping(mapping(session, "subscription"), "latest_invoice")
    if invoice.get("billing_reason") != "subscription_create":
        return None
    return integer(mapping(invoice, "status_transitions"), "paid_at")
