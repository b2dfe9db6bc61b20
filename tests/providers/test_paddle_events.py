"""Paddle events in the node's terms (PROVIDERS.md "Event mapping"): every row of the table,
built from the simulator's own entities, what each entity refers to (txId from custom_data,
adjustments by their transaction only), what money each says (asked, charged, given back), the
change each names, the refund each refund adjustment carries, and bodies that are not
events."""

from __future__ import annotations

import json
from typing import Any

import pytest

from edge.domain import attention
from edge.domain.convergence import Refund
from edge.domain.events import EventType as E
from edge.domain.status import Status as S
from edge.providers.base import REFUND_FAILED, REFUND_PENDING, REFUND_SUCCEEDED, MalformedPayload
from edge.providers.paddle import events
from edge.sim.paddle import objects

TX = "tx_01JD0000000000000000000001"
BASE = "https://sandbox-checkout.paddle.com"


def body(event_type: str, data: dict[str, Any]) -> bytes:
    return objects.body_of(objects.envelope(event_type, data))


def txn(origin: str = "api", recurring: bool = True, paid: bool = True) -> dict[str, Any]:
    at = objects.now_iso()
    given: dict[str, Any] = {
        "description": "Plan",
        "unit_price": {"amount": "1999", "currency_code": "EUR"},
    }
    if recurring:
        given["billing_cycle"] = {"interval": "month", "frequency": 1}
    product = objects.product({"name": "Plan"}, at)
    made = objects.transaction(
        BASE,
        [(objects.price(given, product["id"], at), product, 1)],
        "EUR",
        {"txId": TX, "customerRef": "cust-7", "plan": "gold"},
        origin,
    )
    made.update(customer_id=objects.paddle_id("ctm"), status="ready")
    if paid:
        made["billing_period"] = {
            "starts_at": at,
            "ends_at": objects.later(at, {"interval": "month"}),
        }
        objects.settle(made, "completed")
    return made


def subscription(status: str = "active") -> dict[str, Any]:
    sub = objects.subscription(txn())
    sub["status"] = status
    return sub


def adjustment(action: str, status: str, part: bool = False, reason: str = "why") -> dict[str, Any]:
    return objects.adjustment(txn(), action, 500 if part else None, reason, status)


CHECKOUT_ROWS = [
    ("transaction.created", E.CHECKOUT_CREATED, None),
    ("transaction.ready", E.UNMATCHED, None),
    ("transaction.updated", E.UNMATCHED, None),
    ("transaction.billed", E.UNMATCHED, None),
    ("transaction.payment_failed", E.PAYMENT_ATTEMPT_FAILED, None),
    ("transaction.paid", E.PAYMENT_SUCCEEDED, S.SUCCEEDED),
    ("transaction.completed", E.PAYMENT_SUCCEEDED, S.SUCCEEDED),
    ("transaction.canceled", E.CHECKOUT_CANCELED, S.CANCELED),
]


@pytest.mark.parametrize(("paddle_type", "normalized", "target"), CHECKOUT_ROWS)
@pytest.mark.parametrize("origin", ["web", "api"])
def test_a_checkout_transaction(
    paddle_type: str, normalized: E, target: S | None, origin: str
) -> None:
    data = txn(origin, recurring=False, paid=False)
    event = events.normalize(body(paddle_type, data))
    assert (event.type, event.payment_status, event.subscription_status) == (
        normalized,
        target,
        None,
    )
    assert (event.tx_id, event.customer_ref) == (TX, "cust-7")
    assert event.metadata == {"txId": TX, "customerRef": "cust-7", "plan": "gold"}
    assert event.refs[0] == data["id"]
    assert event.link_refs == (data["id"],)  # never the customer: it buys other things too
    assert event.provider_customer == data["customer_id"]
    assert (event.amount_minor, event.currency) == (1999, "EUR")
    assert not event.starts_subscription


def test_the_checkout_success_that_names_the_subscription_starts_it() -> None:
    data = txn("web")
    paid_early = events.normalize(body("transaction.paid", data))  # no sub_ yet
    assert not paid_early.starts_subscription and paid_early.subscription_ref is None
    data["subscription_id"] = objects.paddle_id("sub")
    completed = events.normalize(body("transaction.completed", data))
    assert completed.starts_subscription
    assert completed.subscription_ref == data["subscription_id"]
    assert completed.link_refs == (data["id"], data["subscription_id"])
    ends = data["billing_period"]["ends_at"]
    assert completed.current_period_end_ms == events.time_ms(ends)


RENEWAL_ROWS = [
    ("transaction.paid", E.SUBSCRIPTION_PAYMENT_SUCCEEDED, S.ACTIVE),
    ("transaction.completed", E.SUBSCRIPTION_PAYMENT_SUCCEEDED, S.ACTIVE),
    ("transaction.payment_failed", E.SUBSCRIPTION_PAYMENT_FAILED, S.PAST_DUE),
    ("transaction.past_due", E.SUBSCRIPTION_PAYMENT_FAILED, S.PAST_DUE),
    ("transaction.canceled", E.UNMATCHED, None),  # a renewal's cancel is not the checkout's
]


@pytest.mark.parametrize(("paddle_type", "normalized", "target"), RENEWAL_ROWS)
def test_a_renewal(paddle_type: str, normalized: E, target: S | None) -> None:
    data = objects.renewal(BASE, subscription())
    event = events.normalize(body(paddle_type, data))
    assert (event.type, event.payment_status, event.subscription_status) == (
        normalized,
        None,
        target,
    )
    assert event.tx_id == TX  # Paddle copied the subscription's custom_data
    # found by its subscription; the renewal's own txn_ is not linked to the checkout
    assert event.refs == (data["subscription_id"], data["id"])
    assert event.link_refs == ()
    assert not event.starts_subscription


SUBSCRIPTION_ROWS = [
    ("subscription.created", "active", E.SUBSCRIPTION_CREATED, S.SUCCEEDED, S.ACTIVE),
    ("subscription.created", "trialing", E.SUBSCRIPTION_CREATED, S.SUCCEEDED, S.TRIALING),
    ("subscription.activated", "active", E.SUBSCRIPTION_UPDATED, None, S.ACTIVE),
    ("subscription.resumed", "active", E.SUBSCRIPTION_UPDATED, None, S.ACTIVE),
    ("subscription.trialing", "trialing", E.SUBSCRIPTION_UPDATED, None, S.TRIALING),
    ("subscription.past_due", "past_due", E.SUBSCRIPTION_PAST_DUE, None, S.PAST_DUE),
    ("subscription.paused", "paused", E.SUBSCRIPTION_UPDATED, None, S.PAUSED),
    ("subscription.updated", "paused", E.SUBSCRIPTION_UPDATED, None, S.PAUSED),
    ("subscription.updated", "past_due", E.SUBSCRIPTION_UPDATED, None, S.PAST_DUE),
    ("subscription.canceled", "canceled", E.SUBSCRIPTION_CANCELED, None, S.CANCELED),
]


@pytest.mark.parametrize(("paddle_type", "status", "normalized", "pay", "sub"), SUBSCRIPTION_ROWS)
def test_a_subscription(
    paddle_type: str, status: str, normalized: E, pay: S | None, sub: S
) -> None:
    data = subscription(status)
    event = events.normalize(body(paddle_type, data))
    assert (event.type, event.payment_status, event.subscription_status) == (normalized, pay, sub)
    assert (event.tx_id, event.subscription_ref) == (TX, data["id"])
    assert event.refs == (data["id"], data["transaction_id"])
    assert event.provider_customer == data["customer_id"]
    assert event.starts_subscription == (paddle_type == "subscription.created")
    assert event.current_period_end_ms == events.time_ms(data["current_billing_period"]["ends_at"])
    assert (event.amount_minor, event.currency) == (1999, "EUR")


ADJUSTMENT_ROWS = [
    ("adjustment.created", "refund", "pending_approval", False, E.UNMATCHED, None),
    ("adjustment.updated", "refund", "approved", False, E.PAYMENT_REFUNDED, S.REFUNDED),
    (
        "adjustment.updated", "refund", "approved", True,
        E.PAYMENT_PARTIALLY_REFUNDED, S.PARTIALLY_REFUNDED,
    ),
    ("adjustment.updated", "refund", "rejected", False, E.PAYMENT_REFUND_FAILED, None),
    ("adjustment.updated", "refund", "rejected", True, E.PAYMENT_REFUND_FAILED, None),
    ("adjustment.created", "chargeback", "approved", False, E.PAYMENT_DISPUTED, S.DISPUTED),
    ("adjustment.created", "chargeback", "approved", True, E.PAYMENT_DISPUTED, S.DISPUTED),
    (
        "adjustment.created", "chargeback_reverse", "approved", False,
        E.PAYMENT_DISPUTE_CLOSED, S.SUCCEEDED,
    ),
    (
        "adjustment.created", "chargeback_warning", "approved", False,
        E.PAYMENT_DISPUTE_WARNING, None,
    ),
    (
        "adjustment.created", "chargeback_warning", "approved", True,
        E.PAYMENT_DISPUTE_WARNING, None,
    ),
    ("adjustment.created", "chargeback_warning_reverse", "approved", False, E.UNMATCHED, None),
    ("adjustment.created", "credit", "approved", False, E.UNMATCHED, None),
]  # fmt: skip


@pytest.mark.parametrize(
    ("paddle_type", "action", "status", "part", "normalized", "target"), ADJUSTMENT_ROWS
)
def test_an_adjustment(
    paddle_type: str, action: str, status: str, part: bool, normalized: E, target: S | None
) -> None:
    data = adjustment(action, status, part)
    event = events.normalize(body(paddle_type, data))
    assert (event.type, event.payment_status) == (normalized, target)
    # no custom_data on adjustments: only the transaction matches, never the customer
    assert event.tx_id is None and event.refs == (data["transaction_id"],)
    assert event.link_refs == () and event.subscription_ref is None
    assert (event.amount_minor, event.currency) == (500 if part else 1999, "EUR")
    # a change of its own, named by the adjustment (a partial chargeback is not the next one)
    assert event.change == (None if normalized == E.UNMATCHED else data["id"])


# what each adjustment event gives back, and what the merchant must look at
MONEY_ROWS = [
    # an approved refund counts; one rejected on review no longer does
    ("refund", "approved", True, None),
    ("refund", "rejected", True, attention.REFUND_FAILED),
    # a chargeback takes the money back at once ("Paddle automatically creates an adjustment to
    # refund the disputed amount"): it counts as given back
    ("chargeback", "approved", True, attention.DISPUTED),
    # Paddle won it: the money is the merchant's again (its amount comes back: the node
    # takes it off what was given back); a warning moves no money
    ("chargeback_reverse", "approved", True, attention.DISPUTE_WON),
    ("chargeback_warning", "approved", False, attention.DISPUTE_WARNING),
    ("chargeback_warning_reverse", "approved", False, None),
]


@pytest.mark.parametrize(("action", "status", "gives_back", "flag"), MONEY_ROWS)
@pytest.mark.parametrize("part", [False, True])
def test_what_an_adjustment_gives_back_and_flags(
    action: str, status: str, gives_back: bool, flag: str | None, part: bool
) -> None:
    data = adjustment(action, status, part)
    paddle_type = "adjustment.updated" if action == "refund" else "adjustment.created"
    event = events.normalize(body(paddle_type, data))
    amount = 500 if part else 1999
    assert event.refund == (Refund(amount, data["id"]) if gives_back else None)
    assert event.attention == flag


@pytest.mark.parametrize(
    ("status", "state"),
    [
        ("pending_approval", REFUND_PENDING),
        ("approved", REFUND_SUCCEEDED),
        ("rejected", REFUND_FAILED),
        ("reversed", REFUND_FAILED),
    ],
)
def test_every_refund_event_carries_the_refund_and_the_node_tag(status: str, state: str) -> None:
    reason = "Damaged in transit [rf_01JD0000000000000000000009]"
    data = adjustment("refund", status, part=True, reason=reason)
    data["created_at"] = "2024-04-12T10:18:49.621022Z"
    for paddle_type in ("adjustment.created", "adjustment.updated"):
        refund = events.normalize(body(paddle_type, data)).provider_refund
        assert refund is not None
        assert (refund.id, refund.amount_minor, refund.state) == (data["id"], 500, state)
        assert (refund.tag, refund.created_ms) == ("rf_01JD0000000000000000000009", 1712917129621)
    made_in_paddle = adjustment("refund", "approved", reason="Customer asked")
    refund = events.normalize(body("adjustment.updated", made_in_paddle)).provider_refund
    assert refund is not None and refund.tag is None  # never the node's
    chargeback = adjustment("chargeback", "approved")
    assert events.normalize(body("adjustment.created", chargeback)).provider_refund is None


def test_a_renewals_paid_and_completed_are_one_change_named_by_its_transaction() -> None:
    renewal = objects.renewal(BASE, subscription())
    changes = {
        events.normalize(body(t, renewal)).change
        for t in ("transaction.paid", "transaction.completed")
    }
    assert changes == {renewal["id"]}
    next_one = objects.renewal(BASE, subscription())
    assert events.normalize(body("transaction.paid", next_one)).change == next_one["id"]
    # a checkout's success happens once: the node names it by its type
    assert events.normalize(body("transaction.paid", txn("api"))).change is None
    # a failed renewal attempt is its own event, as each retry is
    assert events.normalize(body("transaction.payment_failed", renewal)).change is None


def test_a_credit_balance_that_paid_part_still_pays_what_was_asked() -> None:
    """openapi.yaml ``transaction_totals``: ``credit`` "includes credits applied using a
    customer's credit balance"; ``grand_total`` is "Total due on a transaction after credits but
    before any payments". What the checkout asked is its items; what the buyer was charged,
    ``grand_total``."""
    data = txn("api", recurring=False, paid=False)
    objects.apply_credit(data, 700)
    objects.settle(data, "completed")
    totals = data["details"]["totals"]
    assert (totals["total"], totals["credit"], totals["grand_total"]) == ("1999", "700", "1299")
    event = events.normalize(body("transaction.completed", data))
    assert (event.amount_minor, event.currency, event.charged_minor) == (1999, "EUR", 1299)


def test_tax_on_top_is_charged_not_asked() -> None:
    data = txn("api", recurring=False)
    totals = data["details"]["totals"]
    totals.update(tax="380", total="2379", grand_total="2379")
    event = events.normalize(body("transaction.completed", data))
    assert (event.amount_minor, event.charged_minor) == (1999, 2379)


def test_envelope_facts() -> None:
    raw = objects.envelope("transaction.paid", txn("web"))
    raw["occurred_at"] = "2024-04-12T10:18:49.621022Z"
    event = events.normalize(json.dumps(raw).encode())
    assert event.provider_event_id == raw["event_id"] and event.dedup_ids == (raw["event_id"],)
    assert event.provider_type == "transaction.paid"
    assert event.occurred_at_ms == 1712917129621


def test_an_unknown_type_is_stored_with_what_it_names() -> None:
    event = events.normalize(body("customer.created", {"id": "ctm_01hs0t94g83hs5jdw282ztqa4z"}))
    assert (event.type, event.payment_status, event.subscription_status) == (
        E.UNMATCHED,
        None,
        None,
    )
    assert event.refs == ("ctm_01hs0t94g83hs5jdw282ztqa4z",)


def test_what_the_node_did_not_write_is_not_a_tx_id() -> None:
    data = txn("web")
    data["custom_data"] = {"txId": "order-17", "count": 3}
    event = events.normalize(body("transaction.paid", data))
    assert event.tx_id is None and event.metadata == {"txId": "order-17"}  # strings only
    data["customer_id"] = "not-a-customer"
    assert events.normalize(body("transaction.paid", data)).provider_customer is None


@pytest.mark.parametrize(
    "raw",
    [
        b"not json",
        b"[]",
        json.dumps({"event_type": "transaction.paid", "data": {}}).encode(),
        json.dumps({"event_id": "evt_1", "data": {}}).encode(),
        json.dumps({"event_id": "evt_1", "event_type": "transaction.paid", "data": []}).encode(),
    ],
)
def test_bodies_that_are_not_events(raw: bytes) -> None:
    with pytest.raises(MalformedPayload):
        events.normalize(raw)


@pytest.mark.parametrize(
    ("value", "ms"),
    [
        ("2024-04-12T10:18:49Z", 1712917129000),
        ("2024-04-12T10:18:49.5Z", 1712917129500),
        ("2024-04-12T10:18:49.123456789Z", 1712917129123),
        ("2024-04-12T12:18:49.000+02:00", 1712917129000),
        ("2024-04-12", None),
        ("yesterday", None),
        (1712917129, None),
    ],
)
def test_times(value: object, ms: int | None) -> None:
    assert events.time_ms(value) == ms


def test_the_handled_types_are_those_that_move_or_record_something() -> None:
    assert "transaction.completed" in events.HANDLED_EVENT_TYPES
    assert "adjustment.updated" in events.HANDLED_EVENT_TYPES
    assert "transaction.updated" not in events.HANDLED_EVENT_TYPES
