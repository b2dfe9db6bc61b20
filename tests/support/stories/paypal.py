"""PayPal event stories for convergence (CONTRACT 2): every event of the PayPal table, built by
hand (support.paypal_events) on the order or subscription the node created at the simulator
(the checkout's ``providerRef``): the node matches by the PayPal objects it created or linked,
never by ``custom_id`` (CONTRACT 4.3). Refunds carry no ``custom_id`` (one made in PayPal's own
dashboard has none): they match through their capture, and wait when they come before it.
Every amount is the checkout's own (10.00 EUR, 9.00 EUR a month).

Played in every order by tests/contract (test_convergence_contract.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from support import paypal_events as pe

MONTH = 30 * 86400


@dataclass
class Ids:
    tx: str
    order: str
    capture: str
    sub: str


def _e(ids: Ids, n: int, event_type: str, at_s: int, resource: dict[str, Any]) -> bytes:
    return pe.event(f"WH-{ids.tx[-10:]}-{n}", event_type, at_s, resource)


def _order(ids: Ids, status: str) -> dict[str, Any]:
    return pe.order(ids.order, ids.tx, status)


def _capture(ids: Ids, status: str) -> dict[str, Any]:
    return pe.capture(ids.capture, ids.order, ids.tx, status)


def refunded_in_parts(ids: Ids) -> list[bytes]:
    def part(n: int, value: str, total: str) -> dict[str, Any]:
        body = pe.refund(f"R{n}{ids.capture}", ids.capture, ids.tx, value, total)
        del body["custom_id"]
        return body

    return [
        _e(ids, 1, "CHECKOUT.ORDER.APPROVED", 0, _order(ids, "APPROVED")),
        _e(ids, 2, "PAYMENT.CAPTURE.COMPLETED", 10, _capture(ids, "COMPLETED")),
        _e(ids, 3, "PAYMENT.CAPTURE.REFUNDED", 20, part(3, "3.00", "3.00")),
        _e(ids, 4, "PAYMENT.CAPTURE.REFUNDED", 30, part(4, "3.00", "6.00")),
        _e(ids, 5, "PAYMENT.CAPTURE.REFUNDED", 40, part(5, "4.00", "10.00")),
    ]


def disputed(outcome: str) -> Callable[[Ids], list[bytes]]:
    def story(ids: Ids) -> list[bytes]:
        return [
            _e(ids, 1, "PAYMENT.CAPTURE.COMPLETED", 0, _capture(ids, "COMPLETED")),
            _e(ids, 2, "CUSTOMER.DISPUTE.CREATED", 10, pe.dispute(ids.capture, ids.tx)),
            _e(ids, 3, "CUSTOMER.DISPUTE.RESOLVED", 20, pe.dispute(ids.capture, ids.tx, outcome)),
        ]

    return story


def pending_then_declined(ids: Ids) -> list[bytes]:
    return [
        _e(ids, 1, "CHECKOUT.ORDER.APPROVED", 0, _order(ids, "APPROVED")),
        _e(ids, 2, "PAYMENT.CAPTURE.PENDING", 10, _capture(ids, "PENDING")),
        _e(ids, 3, "PAYMENT.CAPTURE.DECLINED", 20, _capture(ids, "DECLINED")),
    ]


def pending_then_denied_after_a_retry(ids: Ids) -> list[bytes]:
    return [
        _e(ids, 1, "PAYMENT.CAPTURE.PENDING", 0, _capture(ids, "PENDING")),
        _e(ids, 2, "PAYMENT.CAPTURE.DENIED", 60, _capture(ids, "DECLINED")),
    ]


def reversed_after_capture(ids: Ids) -> list[bytes]:
    reversal = pe.refund(f"R{ids.capture}", ids.capture, ids.tx, "10.00", "10.00")
    return [
        _e(ids, 1, "PAYMENT.CAPTURE.COMPLETED", 0, _capture(ids, "COMPLETED")),
        _e(ids, 2, "PAYMENT.CAPTURE.REVERSED", 86400, reversal),
    ]


def approval_reversed(ids: Ids) -> list[bytes]:
    return [
        _e(ids, 1, "CHECKOUT.ORDER.APPROVED", 0, _order(ids, "APPROVED")),
        _e(ids, 2, "CHECKOUT.PAYMENT-APPROVAL.REVERSED", 10, _order(ids, "APPROVED")),
    ]


def subscription(ids: Ids) -> list[bytes]:
    def sub(status: str, next_s: int) -> dict[str, Any]:
        return pe.subscription(ids.sub, ids.tx, status, next_s)

    return [
        _e(ids, 1, "BILLING.SUBSCRIPTION.CREATED", 0, sub("APPROVAL_PENDING", MONTH)),
        _e(ids, 2, "BILLING.SUBSCRIPTION.ACTIVATED", 1, sub("ACTIVE", MONTH)),
        _e(ids, 3, "PAYMENT.SALE.COMPLETED", 2, pe.sale(f"S1{ids.order}", ids.sub)),
        _e(ids, 4, "BILLING.SUBSCRIPTION.PAYMENT.FAILED", MONTH, sub("ACTIVE", 2 * MONTH)),
        _e(ids, 5, "PAYMENT.SALE.COMPLETED", MONTH + 3600, pe.sale(f"S2{ids.order}", ids.sub)),
        _e(ids, 6, "BILLING.SUBSCRIPTION.CANCELLED", MONTH + 7200, sub("CANCELLED", 2 * MONTH)),
    ]


def subscription_suspended_and_expired(ids: Ids) -> list[bytes]:
    def sub(status: str, next_s: int) -> dict[str, Any]:
        return pe.subscription(ids.sub, ids.tx, status, next_s)

    return [
        _e(ids, 1, "PAYMENT.SALE.COMPLETED", 0, pe.sale(f"S1{ids.order}", ids.sub)),
        _e(ids, 2, "BILLING.SUBSCRIPTION.SUSPENDED", 10, sub("SUSPENDED", MONTH)),
        _e(ids, 3, "BILLING.SUBSCRIPTION.UPDATED", 20, sub("ACTIVE", MONTH)),
        _e(ids, 4, "BILLING.SUBSCRIPTION.EXPIRED", 12 * MONTH, sub("EXPIRED", 12 * MONTH)),
    ]


STORIES = {
    "refunded in parts": ("ten", refunded_in_parts, ("refunded", 4), None),
    "dispute won": ("ten", disputed("RESOLVED_SELLER_FAVOUR"), ("succeeded", 4), None),
    "dispute lost": ("ten", disputed("RESOLVED_BUYER_FAVOUR"), ("refunded", 4), None),
    "pending then declined": ("ten", pending_then_declined, ("failed", 3), None),
    "approval reversed": ("ten", approval_reversed, ("failed", 2), None),
    "pending then denied": ("ten", pending_then_denied_after_a_retry, ("failed", 3), None),
    "reversed after capture": ("ten", reversed_after_capture, ("refunded", 3), None),
    # active -> paused -> active -> canceled
    "subscription suspended and expired": (
        "pro-monthly",
        subscription_suspended_and_expired,
        ("succeeded", 2),
        ("canceled", 4),
    ),
    # active -> past_due -> active -> canceled
    "subscription": ("pro-monthly", subscription, ("succeeded", 2), ("canceled", 4)),
}
