"""What a notification endpoint is owed and when (CONTRACT 4.8), without I/O.

- An endpoint takes the events of its mode whose type is in its ``types`` (all when empty),
  except ``unmatched`` events, which only an endpoint whose ``types`` name them takes.
- A delivery that does not succeed is retried on the Standard Webhooks schedule: at once,
  then 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h after each failure; after the last it has
  failed for good.
- ``410 Gone`` disables the endpoint at once; an endpoint that has failed without a success in
  between for five days is disabled.
- One message a ``webhook-id``: an event told under one type may later be of another (an
  ``unmatched`` event matched; a held refund whose word, all or part, is settled when it
  applies). It is told again to the endpoints that take its new type and do not have it; an
  entry still to go goes as the event then stands, only to an endpoint that takes that.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

UNMATCHED = "unmatched"
REFUNDS = ("payment.refunded", "payment.partially_refunded")

# seconds to wait after each failed attempt; len + 1 attempts in all
RETRY_S: tuple[int, ...] = (5, 300, 1800, 7200, 18000, 36000, 36000)
DISABLE_AFTER_MS = 5 * 24 * 3600 * 1000
TIMEOUT_S = 15.0


def wants(types: Sequence[str], mode_test: bool, endpoint_mode: str, event_type: str) -> bool:
    """Does an endpoint of ``endpoint_mode`` with ``types`` take this event? An ``unmatched``
    event (about no transaction of the node's) only where ``types`` names it."""
    if (endpoint_mode == "test") != mode_test:
        return False
    if event_type == UNMATCHED:
        return UNMATCHED in types
    return not types or event_type in types


def takes(endpoint: Mapping[str, Any], event: Mapping[str, Any]) -> bool:
    """Does this endpoint take this event, as it now is (``wants``)?"""
    return wants(
        endpoint.get("types") or (), bool(event["isTest"]), endpoint["mode"], event["type"]
    )


def may_change(event: Mapping[str, Any]) -> bool:
    """Might this event, told now, be of another type later? Unmatched (a later event may
    match it), or a refund held until its payment (applied, it says all or part)."""
    kind = event.get("type")
    if kind == UNMATCHED:
        return True
    return kind in REFUNDS and event.get("appliedAt") is None and bool(event.get("txId"))


def may_have_changed(event: Mapping[str, Any]) -> bool:
    """Might this event have been told before under another type (``may_change`` then)?"""
    return event.get("type") in (UNMATCHED, *REFUNDS) or bool(event.get("matchedAt"))


def still_wanted(
    queued_type: str | None, endpoint: Mapping[str, Any], event: Mapping[str, Any]
) -> bool:
    """Is an entry's event still one the endpoint takes? An event of another type than the
    entry was queued for goes only to an endpoint that takes what it became, and not at all if
    it became a repeat of a change already told (``duplicateOf``). A replay (no type kept)
    goes as asked."""
    if queued_type is None or queued_type == event["type"]:
        return True
    return not event.get("duplicateOf") and takes(endpoint, event)


def succeeded(status: int | None) -> bool:
    return status is not None and 200 <= status < 300


def next_try_s(attempts_before: int) -> int | None:
    """Seconds until the next attempt after the ``attempts_before + 1``-th failed; None when
    that was the last."""
    return RETRY_S[attempts_before] if attempts_before < len(RETRY_S) else None


def gone(status: int | None) -> bool:
    """``410 Gone``: the endpoint says it is no more; nothing is retried."""
    return status == 410


def health_after(
    ok: bool, status: int | None, failing_since_ms: int | None, now_ms: int
) -> tuple[int | None, str | None] | None:
    """An endpoint's health after an attempt, ``(failing since, why disabled)``; None when the
    attempt changes nothing (so nothing need be written)."""
    if ok:
        return (None, None) if failing_since_ms is not None else None
    reason = disable_reason(status, failing_since_ms, now_ms)
    if reason is not None:
        return failing_since_ms, reason
    return (now_ms, None) if failing_since_ms is None else None


def disable_reason(status: int | None, failing_since_ms: int | None, now_ms: int) -> str | None:
    """Why the endpoint is disabled after this failed attempt, or None while it is kept."""
    if gone(status):
        return "the endpoint answered 410 Gone"
    if failing_since_ms is not None and now_ms - failing_since_ms >= DISABLE_AFTER_MS:
        return "the endpoint has failed for 5 days"
    return None


TEST_MARK = "edgeTest"


def sample_event(
    event_id: str, tx_id: str, project_id: str, is_test: bool, now_iso: str
) -> dict[str, Any]:
    """What "Send a test event" posts: a normalized event of the usual shape (a 1.00 EUR
    checkout just created, pay by mail), marked in its metadata as a test, about a transaction
    that does not exist. It is not stored, counted or kept in the feed."""
    return {
        "id": event_id,
        "projectId": project_id,
        "provider": "manual",
        "providerEventId": None,
        "type": "checkout.created",
        "txId": tx_id,
        "subscriptionId": None,
        "status": "pending",
        "version": 1,
        "amount": 1.0,
        "currency": "EUR",
        "isTest": is_test,
        "customerRef": None,
        "metadata": {TEST_MARK: "true"},
        "occurredAt": now_iso,
        "receivedAt": now_iso,
        "appliedAt": now_iso,
        "source": "node",
    }
