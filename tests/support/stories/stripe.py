"""Stripe event stories for convergence (CONTRACT 2), built in Stripe's shapes (tests/fixtures)
with the ids a real story shares: the session is the one the node created (the checkout's
``providerRef``) and names the payment intent; charges and disputes name only the payment intent
and the charge (no metadata), so an event that comes before the session is ``unmatched`` until
the session links the payment intent. Subscription events name only the subscription. Every
amount is the checkout's own (19.99 EUR for the book, 9.00 EUR a month for Pro), in Stripe's
units: the node compares what a payment reports with what the checkout asked (CONTRACT 4.3).

Played in every order by tests/contract (test_convergence_contract.py)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from support.stripe_events import stripe_object

T0 = 1_790_000_000  # seconds: every story starts here
BOOK, PRO = 1999, 900  # what the shop's checkouts ask, in cents of EUR (support.stripe_shop)


@dataclass
class Ids:
    tx: str
    session: str
    pi: str
    ch: str
    sub: str


def _event(n: int, ids: Ids, stripe_type: str, at_s: int, obj: dict[str, Any]) -> bytes:
    envelope = stripe_object("event", id=f"evt_{ids.tx[-10:]}_{n}", type=stripe_type)
    envelope.update(created=T0 + at_s, data={"object": obj}, livemode=False)
    return json.dumps(envelope).encode()


def _session(ids: Ids, payment_status: str, subscription: bool = False, status: str = "complete"):
    return stripe_object(
        "checkout_session",
        id=ids.session,
        client_reference_id=ids.tx,
        payment_intent=None if subscription else ids.pi,
        payment_status=payment_status,
        status=status,
        mode="subscription" if subscription else "payment",
        subscription=ids.sub if subscription else None,
        customer="cus_conv" if subscription else None,
        metadata={},
        amount_subtotal=PRO if subscription else BOOK,
        amount_total=PRO if subscription else BOOK,
        currency="eur",
    )


def _charge(ids: Ids, refunded: int) -> dict[str, Any]:
    return stripe_object(
        "charge",
        id=ids.ch,
        payment_intent=ids.pi,
        amount=BOOK,
        amount_refunded=refunded,
        refunded=refunded >= BOOK,
        currency="eur",
        metadata={},
    )


def _dispute(ids: Ids, status: str) -> dict[str, Any]:
    return stripe_object(
        "dispute",
        charge=ids.ch,
        payment_intent=ids.pi,
        status=status,
        metadata={},
        amount=BOOK,
        currency="eur",
    )


def _subscription(ids: Ids, status: str, period_end: int) -> dict[str, Any]:
    sub = stripe_object("subscription", id=ids.sub, status=status, metadata={}, currency="eur")
    item = sub["items"]["data"][0]
    item["current_period_end"] = T0 + period_end
    item["price"].update(unit_amount=PRO, currency="eur")
    return sub


def _invoice(ids: Ids, n: int, reason: str, period_end: int) -> dict[str, Any]:
    invoice = stripe_object(
        "invoice",
        id=f"in_conv{n}_{ids.tx[-8:]}",
        billing_reason=reason,
        amount_due=PRO,
        amount_paid=PRO,
        currency="eur",
    )
    invoice["parent"]["subscription_details"] = {"metadata": {}, "subscription": ids.sub}
    line = invoice["lines"]["data"][0]
    line["parent"]["subscription_item_details"]["subscription"] = ids.sub
    line["period"]["end"] = T0 + period_end
    return invoice


def paid_and_refunded_in_parts(ids: Ids) -> list[bytes]:
    return [
        _event(1, ids, "checkout.session.completed", 0, _session(ids, "paid")),
        _event(2, ids, "charge.refunded", 10, _charge(ids, 600)),
        _event(3, ids, "charge.refunded", 20, _charge(ids, 1200)),
        _event(4, ids, "charge.refunded", 30, _charge(ids, BOOK)),
    ]


def disputed(outcome: str):
    def story(ids: Ids) -> list[bytes]:
        return [
            _event(1, ids, "checkout.session.completed", 0, _session(ids, "paid")),
            _event(2, ids, "charge.dispute.created", 10, _dispute(ids, "needs_response")),
            _event(3, ids, "charge.dispute.closed", 20, _dispute(ids, outcome)),
        ]

    return story


def async_failed(ids: Ids) -> list[bytes]:
    return [
        _event(1, ids, "checkout.session.completed", 0, _session(ids, "unpaid")),
        _event(2, ids, "checkout.session.async_payment_failed", 60, _session(ids, "unpaid")),
    ]


def expired(ids: Ids) -> list[bytes]:
    session = _session(ids, "unpaid", status="expired")
    return [_event(1, ids, "checkout.session.expired", 0, session)]


def subscription(ids: Ids) -> list[bytes]:
    month = 30 * 86400
    created, paid = _subscription(ids, "active", month), _session(ids, "paid", subscription=True)
    first, failed = _invoice(ids, 1, "subscription_create", month), _invoice(ids, 2, "x", 2 * month)
    past_due, again = _subscription(ids, "past_due", 2 * month), _invoice(ids, 3, "x", 2 * month)
    ended = _subscription(ids, "canceled", 2 * month)
    return [
        _event(1, ids, "customer.subscription.created", 0, created),
        _event(2, ids, "checkout.session.completed", 0, paid),
        _event(3, ids, "invoice.paid", 0, first),
        _event(4, ids, "invoice.payment_failed", month, failed),
        _event(5, ids, "customer.subscription.updated", month, past_due),
        _event(6, ids, "invoice.paid", month + 3600, again),
        _event(7, ids, "customer.subscription.deleted", month + 7200, ended),
    ]


STORIES = {
    "refunded in parts": ("book", paid_and_refunded_in_parts, ("refunded", 4)),
    "dispute won": ("book", disputed("won"), ("succeeded", 4)),
    "dispute lost": ("book", disputed("lost"), ("refunded", 4)),
    "async failed": ("book", async_failed, ("failed", 3)),
    "expired": ("book", expired, ("expired", 2)),
    "subscription": ("pro-monthly", subscription, ("succeeded", 2)),
}
SUBSCRIPTION_END = ("canceled", 4)  # active -> past_due -> active -> canceled
