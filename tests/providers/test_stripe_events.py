"""Every row of the Stripe event table, on the project's example objects (tests/fixtures/stripe).

The same reading of Stripe's own published examples is in tests/conformance.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from support.stripe_events import stripe_object as fixture

from edge.domain.convergence import Refund
from edge.domain.events import EventType as E
from edge.domain.status import Status as S
from edge.providers.base import (
    REFUND_FAILED,
    REFUND_PENDING,
    REFUND_SUCCEEDED,
    MalformedPayload,
    NormalizedEvent,
    ProviderRefund,
)
from edge.providers.stripe import STRIPE
from edge.providers.stripe.events import EVENT_TABLE, HANDLED_EVENT_TYPES, REFUND_TYPES
from edge.sim.stripe import objects as sim_objects

TX = "tx_01JD0000000000000000000000"
META = {"txId": TX, "customerRef": "user-42", "plan": "pro"}
INTENT = fixture("payment_intent")["id"]
CHARGE = fixture("charge")["id"]
SUBSCRIPTION = fixture("subscription")
INVOICE = fixture("invoice")


def normalize(event_type: str, obj: dict[str, Any], event_id: str = "evt_123") -> NormalizedEvent:
    event = fixture(
        "event", id=event_id, type=event_type, data={"object": obj}, created=1_700_000_000
    )
    return STRIPE.normalize(json.dumps(event).encode(), "test")


# --- checkout sessions ------------------------------------------------------------------


def session(**changes: Any) -> dict[str, Any]:
    base = {
        "metadata": dict(META),
        "client_reference_id": TX,
        "amount_total": 1999,
        "currency": "eur",
    }
    return fixture("checkout_session", **{**base, **changes})


@pytest.mark.parametrize("payment_status", ["paid", "no_payment_required"])
def test_session_completed_paid_is_a_succeeded_payment(payment_status: str) -> None:
    obj = session(payment_status=payment_status, status="complete")
    ev = normalize("checkout.session.completed", obj)
    assert (ev.type, ev.payment_status, ev.subscription_status) == (
        E.PAYMENT_SUCCEEDED,
        S.SUCCEEDED,
        None,
    )
    assert ev.tx_id == TX and ev.refs == (obj["id"],)
    assert ev.link_refs == (INTENT,)
    assert not ev.starts_subscription and ev.subscription_ref is None
    assert (ev.amount_minor, ev.currency) == (1999, "EUR")
    assert ev.customer_ref == "user-42" and ev.metadata == META
    assert ev.provider_event_id == "evt_123" and ev.provider_type == "checkout.session.completed"
    assert ev.occurred_at_ms == 1_700_000_000_000


def test_subscription_checkout_completed_starts_the_subscription() -> None:
    obj = session(
        payment_status="paid", mode="subscription", payment_intent=None,
        subscription="sub_1", customer="cus_1",
    )  # fmt: skip
    ev = normalize("checkout.session.completed", obj)
    assert ev.type == E.PAYMENT_SUCCEEDED and ev.payment_status == S.SUCCEEDED
    assert ev.starts_subscription and ev.subscription_ref == "sub_1"
    assert ev.provider_customer == "cus_1"
    assert ev.link_refs == ("sub_1",)  # never the customer: it pays for other things too


def test_unpaid_completed_session_is_processing() -> None:
    ev = normalize("checkout.session.completed", session(payment_status="unpaid"))
    assert (ev.type, ev.payment_status) == (E.PAYMENT_PROCESSING, S.PROCESSING)


def test_tx_id_falls_back_to_metadata_and_rejects_garbage() -> None:
    assert normalize("checkout.session.expired", session(client_reference_id=None)).tx_id == TX
    garbage = session(client_reference_id="nope", metadata={"txId": "tx_bad"})
    assert normalize("checkout.session.expired", garbage).tx_id is None


@pytest.mark.parametrize(
    ("stripe_type", "expected"),
    [
        ("checkout.session.async_payment_succeeded", (E.PAYMENT_SUCCEEDED, S.SUCCEEDED)),
        ("checkout.session.async_payment_failed", (E.PAYMENT_FAILED, S.FAILED)),
        ("checkout.session.expired", (E.CHECKOUT_EXPIRED, S.EXPIRED)),
    ],
)
def test_other_session_events(stripe_type: str, expected: tuple[E, S]) -> None:
    ev = normalize(stripe_type, session())
    assert (ev.type, ev.payment_status) == expected
    assert ev.tx_id == TX


# --- payment intents, charges, disputes -------------------------------------------------


def test_declined_attempt_changes_no_status() -> None:
    obj = fixture("payment_intent", metadata=dict(META), latest_charge="ch_9")
    ev = normalize("payment_intent.payment_failed", obj)
    assert ev.type == E.PAYMENT_ATTEMPT_FAILED
    assert ev.payment_status is None and ev.subscription_status is None
    assert ev.refs == (INTENT,) and ev.link_refs == ("ch_9",) and ev.tx_id == TX
    assert (ev.amount_minor, ev.currency) == (2500, "USD")


@pytest.mark.parametrize(
    ("refunded", "expected"),
    [
        (100, (E.PAYMENT_REFUNDED, S.REFUNDED)),
        (40, (E.PAYMENT_PARTIALLY_REFUNDED, S.PARTIALLY_REFUNDED)),
    ],
)
def test_full_and_partial_refunds(refunded: int, expected: tuple[E, S]) -> None:
    obj = fixture(
        "charge", amount=100, amount_refunded=refunded, payment_intent="pi_1", metadata=dict(META)
    )
    ev = normalize("charge.refunded", obj)
    assert (ev.type, ev.payment_status) == expected
    assert ev.amount_minor == refunded and ev.currency == "USD"
    assert ev.refs == ("pi_1", CHARGE) and ev.tx_id == TX


def test_refund_of_a_charge_without_intent_still_names_the_charge() -> None:
    obj = fixture("charge", payment_intent=None, amount_refunded=2500)
    ev = normalize("charge.refunded", obj)
    assert ev.refs == (CHARGE,) and ev.tx_id is None


def test_dispute_created() -> None:
    ev = normalize("charge.dispute.created", fixture("dispute", payment_intent="pi_1"))
    assert (ev.type, ev.payment_status) == (E.PAYMENT_DISPUTED, S.DISPUTED)
    assert ev.refs == ("pi_1", CHARGE)
    assert (ev.amount_minor, ev.currency) == (2500, "USD")


@pytest.mark.parametrize(
    ("status", "target"),
    [("won", S.SUCCEEDED), ("warning_closed", S.SUCCEEDED), ("lost", S.REFUNDED)],
)
def test_dispute_closed(status: str, target: S) -> None:
    obj = fixture("dispute", status=status, payment_intent="pi_1")
    ev = normalize("charge.dispute.closed", obj)
    assert (ev.type, ev.payment_status) == (E.PAYMENT_DISPUTE_CLOSED, target)
    assert ev.change == obj["id"]  # the dispute names its change, whatever its outcome
    # lost, it gives back what was disputed, as a refund named by the dispute
    assert ev.refund == (Refund(2500, of=obj["id"]) if status == "lost" else None)


def test_a_partial_dispute_lost_gives_back_its_own_amount() -> None:
    obj = fixture("dispute", status="lost", payment_intent="pi_1", amount=700)
    opened = normalize("charge.dispute.created", {**obj, "status": "needs_response"})
    closed = normalize("charge.dispute.closed", obj)
    assert (opened.amount_minor, opened.change, opened.refund) == (700, obj["id"], None)
    assert closed.refund == Refund(700, of=obj["id"])


# --- each refund, by its own events -----------------------------------------------------


def charge_object() -> dict[str, Any]:
    return sim_objects.charge(
        livemode=False, amount=2500, currency="usd", payment_intent_id="pi_1", charge_id=CHARGE
    )


def refund_object(**changes: Any) -> dict[str, Any]:
    """A refund as Stripe makes it for the node's refund call (tagged, as refunds.py tags)."""
    made = sim_objects.refund(
        charge_obj=charge_object(), amount=500, metadata={"txId": TX, "refundId": "rf_1"}
    )
    made.update(changes)
    return made


@pytest.mark.parametrize("stripe_type", REFUND_TYPES)
def test_a_refund_that_succeeded_gives_back_its_amount_by_its_id(stripe_type: str) -> None:
    obj = refund_object(status="succeeded")
    ev = normalize(stripe_type, obj)
    assert (ev.type, ev.payment_status) == (E.PAYMENT_REFUNDED, S.REFUNDED)
    assert ev.refund == Refund(500, of=obj["id"]) and ev.change is None
    assert ev.refs == ("pi_1", CHARGE) and ev.link_refs == (CHARGE,) and ev.tx_id == TX
    assert ev.provider_refund == ProviderRefund(
        obj["id"], 500, REFUND_SUCCEEDED, obj["created"] * 1000, "rf_1", ""
    )


@pytest.mark.parametrize("status", ["pending", "requires_action", "a_status_of_tomorrow"])
def test_a_refund_under_way_is_history_that_names_the_refund(status: str) -> None:
    ev = normalize("refund.updated", refund_object(status=status))
    assert (ev.type, ev.payment_status, ev.refund) == (E.UNMATCHED, None, None)
    assert ev.provider_refund is not None and ev.provider_refund.state == REFUND_PENDING
    assert ev.provider_refund.tag == "rf_1" and ev.refs == ("pi_1", CHARGE)


@pytest.mark.parametrize("status", ["failed", "canceled"])
@pytest.mark.parametrize("stripe_type", ["refund.failed", "charge.refund.updated"])
def test_a_refund_that_failed_takes_back_what_it_gave(stripe_type: str, status: str) -> None:
    obj = refund_object(status=status, failure_reason="expired_or_canceled_card")
    ev = normalize(stripe_type, obj)
    assert (ev.type, ev.payment_status) == (E.PAYMENT_REFUND_FAILED, None)
    assert ev.refund == Refund(500, of=obj["id"])
    assert ev.provider_refund is not None and ev.provider_refund.state == REFUND_FAILED
    assert ev.provider_refund.detail == "expired_or_canceled_card"


def test_a_refund_of_an_amount_the_node_cannot_read() -> None:
    ev = normalize("refund.created", refund_object(currency="xyz"))
    assert ev.refund is None and ev.unreadable_amount == "500 xyz"
    assert ev.provider_refund is not None and ev.provider_refund.amount_minor is None


def test_a_total_refunded_names_no_refund() -> None:
    ev = normalize("charge.refunded", fixture("charge", amount=100, amount_refunded=40))
    assert ev.refund == Refund(40) and ev.provider_refund is None and ev.change is None


# --- early fraud warnings ---------------------------------------------------------------


@pytest.mark.parametrize(
    "stripe_type", ["radar.early_fraud_warning.created", "radar.early_fraud_warning.updated"]
)
def test_an_early_fraud_warning_is_a_dispute_warning(stripe_type: str) -> None:
    obj = sim_objects.early_fraud_warning(charge_obj=charge_object())
    ev = normalize(stripe_type, obj)
    assert (ev.type, ev.payment_status, ev.subscription_status) == (
        E.PAYMENT_DISPUTE_WARNING, None, None,
    )  # fmt: skip
    assert ev.change == obj["id"] and ev.refs == ("pi_1", CHARGE)
    assert ev.amount_minor is None and ev.refund is None  # a warning states no amount


# --- subscriptions ----------------------------------------------------------------------


def subscription(**changes: Any) -> dict[str, Any]:
    return fixture("subscription", metadata=dict(META), **changes)


@pytest.mark.parametrize(
    ("stripe_status", "target"),
    [
        ("active", S.ACTIVE), ("trialing", S.TRIALING), ("past_due", S.PAST_DUE),
        ("unpaid", S.PAST_DUE), ("paused", S.PAUSED), ("canceled", S.CANCELED),
        ("incomplete", None), ("incomplete_expired", S.CANCELED),
    ],
)  # fmt: skip
def test_subscription_created_takes_stripe_status(stripe_status: str, target: S | None) -> None:
    ev = normalize("customer.subscription.created", subscription(status=stripe_status))
    assert ev.type == E.SUBSCRIPTION_CREATED and ev.subscription_status == target
    assert ev.payment_status is None and not ev.starts_subscription


def test_subscription_fields_read_from_a_basil_object() -> None:
    ev = normalize("customer.subscription.updated", subscription(status="active"))
    assert ev.type == E.SUBSCRIPTION_UPDATED and ev.subscription_status == S.ACTIVE
    assert ev.subscription_ref == SUBSCRIPTION["id"] == ev.refs[0]
    item = SUBSCRIPTION["items"]["data"][0]
    assert ev.current_period_end_ms == item["current_period_end"] * 1000
    assert ev.provider_customer == SUBSCRIPTION["customer"]
    assert ev.tx_id == TX and ev.customer_ref == "user-42"
    assert (ev.amount_minor, ev.currency) == (2000, "USD")


def test_subscription_period_end_from_an_older_api_version() -> None:
    ev = normalize("customer.subscription.updated", subscription(current_period_end=1_800_000_000))
    assert ev.current_period_end_ms == 1_800_000_000_000


@pytest.mark.parametrize("stripe_status", ["past_due", "unpaid"])
def test_subscription_updated_to_past_due(stripe_status: str) -> None:
    ev = normalize("customer.subscription.updated", subscription(status=stripe_status))
    assert (ev.type, ev.subscription_status) == (E.SUBSCRIPTION_PAST_DUE, S.PAST_DUE)


@pytest.mark.parametrize(
    ("stripe_type", "target"),
    [
        ("customer.subscription.deleted", S.CANCELED),
        ("customer.subscription.paused", S.PAUSED),
        ("customer.subscription.resumed", S.ACTIVE),
    ],
)
def test_subscription_lifecycle_events(stripe_type: str, target: S) -> None:
    ev = normalize(stripe_type, subscription(status="active"))
    assert ev.subscription_status == target
    assert ev.type == (E.SUBSCRIPTION_CANCELED if target == S.CANCELED else E.SUBSCRIPTION_UPDATED)


# --- invoices ---------------------------------------------------------------------------


def basil_invoice(**changes: Any) -> dict[str, Any]:
    obj = fixture("invoice", amount_paid=900, amount_due=900, currency="eur")
    obj["parent"]["subscription_details"] = {"metadata": dict(META), "subscription": "sub_1"}
    obj.update(changes)
    return obj


def test_first_invoice_paid_starts_the_subscription() -> None:
    ev = normalize("invoice.paid", basil_invoice(billing_reason="subscription_create"))
    assert ev.type == E.SUBSCRIPTION_PAYMENT_SUCCEEDED
    assert (ev.payment_status, ev.subscription_status) == (S.SUCCEEDED, S.ACTIVE)
    assert ev.starts_subscription and ev.subscription_ref == "sub_1"
    assert ev.tx_id == TX and ev.metadata == META
    assert (ev.amount_minor, ev.currency) == (900, "EUR")
    assert ev.refs == ("sub_1", INVOICE["id"])
    assert ev.provider_customer == INVOICE["customer"]
    line = INVOICE["lines"]["data"][0]
    assert ev.current_period_end_ms == line["period"]["end"] * 1000  # the paid line's period


def test_renewal_invoice_paid_changes_only_the_subscription() -> None:
    ev = normalize("invoice.paid", basil_invoice(billing_reason="subscription_cycle"))
    assert (ev.payment_status, ev.subscription_status) == (None, S.ACTIVE)
    assert not ev.starts_subscription
    assert ev.change == INVOICE["id"]  # a renewal is named by its invoice


def test_the_first_invoice_names_no_change_of_its_own() -> None:
    """The first invoice is the checkout's payment: the node names it by its type."""
    assert (
        normalize("invoice.paid", basil_invoice(billing_reason="subscription_create")).change
        is None
    )


@pytest.mark.parametrize("reason", ["subscription_create", "subscription_cycle"])
def test_invoice_payment_failed(reason: str) -> None:
    ev = normalize("invoice.payment_failed", basil_invoice(billing_reason=reason, amount_paid=0))
    assert ev.type == E.SUBSCRIPTION_PAYMENT_FAILED
    assert (ev.payment_status, ev.subscription_status) == (None, S.PAST_DUE)
    assert ev.amount_minor == 900 and not ev.starts_subscription
    assert ev.change == (INVOICE["id"] if reason == "subscription_cycle" else None)


def test_invoice_of_an_older_api_version() -> None:
    obj = fixture(
        "invoice", subscription="sub_old", parent=None, billing_reason="subscription_cycle"
    )  # before basil an invoice named its subscription, and had subscription_details
    obj["lines"]["data"][0]["parent"] = None
    obj["subscription_details"] = {"metadata": dict(META)}
    ev = normalize("invoice.paid", obj)
    assert ev.subscription_ref == "sub_old" and ev.tx_id == TX


def test_invoice_metadata_from_its_line_when_the_parent_has_none() -> None:
    obj = basil_invoice()
    obj["parent"]["subscription_details"]["metadata"] = None
    obj["lines"]["data"][0]["metadata"] = dict(META)
    assert normalize("invoice.paid", obj).tx_id == TX


# --- the table as a whole, unknown and malformed events ---------------------------------


def test_every_table_type_is_covered_above() -> None:
    assert set(HANDLED_EVENT_TYPES) == {t for t, _ in EVENT_TABLE}
    assert "checkout.session.completed" in HANDLED_EVENT_TYPES
    assert {*REFUND_TYPES, "radar.early_fraud_warning.created"} <= set(HANDLED_EVENT_TYPES)


def test_unknown_type_is_kept_as_unmatched() -> None:
    ev = normalize("payment_intent.succeeded", fixture("payment_intent", metadata=dict(META)))
    assert ev.type == E.UNMATCHED and ev.provider_type == "payment_intent.succeeded"
    assert ev.payment_status is None and ev.subscription_status is None
    assert ev.tx_id == TX  # still tagged, so the history shows it under its transaction
    plan = fixture("event")  # a plan.created event: an object kind with no reader
    assert STRIPE.normalize(json.dumps(plan).encode(), "test").type == E.UNMATCHED


def test_unknown_currency_drops_the_amount() -> None:
    ev = normalize("charge.refunded", fixture("charge", currency="currency", amount_refunded=100))
    assert ev.amount_minor is None and ev.currency is None


@pytest.mark.parametrize(
    "body",
    [
        b"not json",
        b"\xff\xfe",
        b"[]",
        b'{"type": "charge.refunded", "data": {"object": {}}}',
        b'{"id": "evt_1", "data": {"object": {}}}',
        b'{"id": "evt_1", "type": "charge.refunded"}',
        b'{"id": "evt_1", "type": "charge.refunded", "data": {"object": []}}',
        b'{"id": 5, "type": "charge.refunded", "data": {"object": {}}}',
    ],
)
def test_malformed_bodies(body: bytes) -> None:
    with pytest.raises(MalformedPayload):
        STRIPE.normalize(body, "test")


def test_odd_field_types_do_not_crash_the_reader() -> None:
    obj = {
        "object": "invoice", "id": "in_1", "lines": {"data": "x"}, "parent": [],
        "metadata": ["a"], "amount_paid": "9", "currency": 5, "subscription": {"id": "sub_9"},
    }  # fmt: skip
    ev = normalize("invoice.paid", obj)
    assert ev.subscription_ref == "sub_9" and ev.amount_minor is None and ev.metadata == {}


@pytest.mark.parametrize("stated", ["1999", 19.99, True, "1", [1999]])
def test_a_paid_amount_stated_in_another_type_is_stated_and_unreadable(stated: Any) -> None:
    """Stripe states an amount as a whole number of minor units; one stated otherwise is not
    read as no amount (which skips the amount check, CONTRACT 4.3) but as one the node cannot
    read, which never matches the checkout's."""
    ev = normalize("checkout.session.completed", session(amount_total=stated))
    assert ev.amount_minor is None and ev.unreadable_amount == f"{stated} eur"[:40]


def test_a_refund_stated_in_another_type_names_no_amount_it_could_count() -> None:
    ev = normalize("refund.created", refund_object(amount="500"))
    assert ev.refund is None and ev.unreadable_amount == "500 usd"
