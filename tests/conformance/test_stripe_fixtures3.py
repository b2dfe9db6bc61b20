"""Against Stripe's own example objects (stripe/openapi ``fixtures3.json``, in
../shared/provider-data): the simulator emits the keys Stripe's examples have, and the adapter
reads the references out of each kind of object it handles.

fixtures3.json follows Stripe's latest API but lags it in places (an invoice still lists
``subscription``, which the SDK of the declared version no longer has): those keys are read off
the SDK, not listed here, so the comparison stays exact for every other key.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from conformance.stripe_built import BUILT
from conformance.stripe_sdk import field_types, object_issues, resource_class
from edge.domain.convergence import Refund
from edge.domain.events import EventType as E
from edge.domain.status import Status as S
from edge.providers.base import NormalizedEvent
from edge.providers.stripe import STRIPE
from edge.sim.stripe import SUPPORTED_TRIGGERS, event_for_trigger

# The simulator's object of each kind Stripe's examples have.
SIMULATED = {
    "checkout.session": "checkout.session (payment)", "payment_intent": "payment_intent",
    "charge": "charge", "refund": "refund", "dispute": "dispute (needs_response)",
    "customer": "customer", "subscription": "subscription (month)",
    "invoice": "invoice (subscription_create)", "billing_portal.session": "billing_portal.session",
    "event": "event", "radar.early_fraud_warning": "radar.early_fraud_warning",
}  # fmt: skip
# Keys the declared API version has that Stripe's example leaves out: a warning names its payment
# intent (stripe-python 16.1.0 radar/_early_fraud_warning.py, ``payment_intent``), which the
# node matches it by.
EXAMPLE_LEAVES_OUT = {"radar.early_fraud_warning": {"payment_intent"}}
# Where the examples lag the declared API version, as the walker reports it.
KNOWN_LAGS = {
    "dispute": ["dispute.evidence_details.submission_method: required field of"
                " Dispute.EvidenceDetails missing"],
    "invoice": ["invoice.subscription: unknown field of Invoice"],
    "event": ["event.data.object.aggregate_usage: unknown field of Plan"],  # a plan.created
}  # fmt: skip
TX = "tx_01JD0000000000000000000000"
META = {"txId": TX, "customerRef": "user-42", "plan": "pro"}


def current_keys(example: dict[str, Any], kind: str) -> set[str]:
    """The example's keys that the declared API version still has."""
    return set(example) & set(field_types(resource_class(kind)))


@pytest.mark.parametrize("kind", sorted(SIMULATED))
def test_the_simulator_emits_the_keys_of_stripes_examples(
    kind: str, stripe_fixtures3: dict[str, Any]
) -> None:
    ours = BUILT[SIMULATED[kind]]
    expected = current_keys(stripe_fixtures3[kind], kind) | EXAMPLE_LEAVES_OUT.get(kind, set())
    assert set(ours) == expected
    assert ours["object"] == kind


@pytest.mark.parametrize(("kind", "list_key"), [("subscription", "items"), ("invoice", "lines")])
def test_list_items_have_the_keys_of_stripes_examples(
    kind: str, list_key: str, stripe_fixtures3: dict[str, Any]
) -> None:
    ours = BUILT[SIMULATED[kind]][list_key]["data"][0]
    theirs = stripe_fixtures3[kind][list_key]["data"][0]
    assert set(ours) == current_keys(theirs, theirs["object"])


def test_a_webhook_endpoint_adds_only_the_creation_time_secret(
    stripe_fixtures3: dict[str, Any],
) -> None:
    assert set(BUILT["webhook_endpoint"]) == set(stripe_fixtures3["webhook_endpoint"]) | {"secret"}


@pytest.mark.parametrize("normalized_type", SUPPORTED_TRIGGERS)
def test_trigger_events_have_the_keys_of_stripes_event(
    normalized_type: str, stripe_fixtures3: dict[str, Any]
) -> None:
    event = event_for_trigger(normalized_type, {"id": TX, "amount": 100, "currency": "EUR"})
    assert set(event) == set(stripe_fixtures3["event"])


@pytest.mark.parametrize("kind", sorted(SIMULATED))
def test_the_walker_finds_only_the_known_lags_in_stripes_examples(
    kind: str, stripe_fixtures3: dict[str, Any]
) -> None:
    """A positive control: on Stripe's own objects the SDK walker reports no false findings."""
    assert object_issues(stripe_fixtures3[kind], kind) == KNOWN_LAGS.get(kind, [])


# --- the adapter on Stripe's examples -----------------------------------------------------


@pytest.fixture
def example(stripe_fixtures3: dict[str, Any]) -> Any:
    def make(kind: str, **changes: Any) -> dict[str, Any]:
        obj = copy.deepcopy(stripe_fixtures3[kind])
        obj.update(changes)
        return obj

    return make


def normalize(example: Any, event_type: str, obj: dict[str, Any]) -> NormalizedEvent:
    event = example("event", id="evt_123", type=event_type, data={"object": obj})
    return STRIPE.normalize(json.dumps(event).encode(), "test")


def test_a_completed_session(example: Any) -> None:
    obj = example(
        "checkout.session", metadata=dict(META), client_reference_id=TX, payment_status="paid"
    )
    ev = normalize(example, "checkout.session.completed", obj)
    assert (ev.type, ev.payment_status) == (E.PAYMENT_SUCCEEDED, S.SUCCEEDED)
    assert ev.tx_id == TX and ev.refs == (obj["id"],)
    assert ev.link_refs == (obj["payment_intent"],) == ("pi_1PgafyB7WZ01zgkWSjxsAJo3",)


def test_a_declined_payment_intent(example: Any) -> None:
    obj = example("payment_intent", metadata=dict(META))
    ev = normalize(example, "payment_intent.payment_failed", obj)
    assert ev.type == E.PAYMENT_ATTEMPT_FAILED and ev.tx_id == TX
    assert ev.refs == ("pi_1PgafyB7WZ01zgkWSjxsAJo3",)
    assert (ev.amount_minor, ev.currency) == (1099, "USD")


def test_a_refunded_charge(example: Any) -> None:
    ev = normalize(example, "charge.refunded", example("charge", amount_refunded=100))
    assert ev.type == E.PAYMENT_REFUNDED and ev.amount_minor == 100
    assert ev.refs == ("ch_1PgafuB7WZ01zgkWXYmPNZs8",)  # the example has no payment intent


def test_a_dispute(example: Any) -> None:
    ev = normalize(example, "charge.dispute.created", example("dispute", payment_intent="pi_1"))
    assert (ev.type, ev.payment_status) == (E.PAYMENT_DISPUTED, S.DISPUTED)
    assert ev.refs == ("pi_1", "ch_1PgafuB7WZ01zgkWXYmPNZs8")
    assert (ev.amount_minor, ev.currency) == (1000, "USD")


def test_a_subscription(example: Any) -> None:
    obj = example("subscription", metadata=dict(META), status="active")
    ev = normalize(example, "customer.subscription.updated", obj)
    assert ev.type == E.SUBSCRIPTION_UPDATED and ev.subscription_status == S.ACTIVE
    assert ev.subscription_ref == "sub_1Pgc6rB7WZ01zgkWNy0Cn5nw" == ev.refs[0]
    assert ev.current_period_end_ms == 976287773 * 1000  # items.data[0].current_period_end
    assert ev.provider_customer == "cus_QXg1o8vcGmoR32"
    assert (ev.amount_minor, ev.currency) == (2000, "USD")


def test_an_invoice(example: Any) -> None:
    obj = example("invoice", billing_reason="subscription_create")
    del obj["subscription"]  # not in the declared API version (a lag of the example)
    obj["parent"] = {
        "quote_details": None,
        "subscription_details": {"metadata": dict(META), "subscription": "sub_1"},
        "type": "subscription_details",
    }
    ev = normalize(example, "invoice.paid", obj)
    assert ev.type == E.SUBSCRIPTION_PAYMENT_SUCCEEDED and ev.starts_subscription
    assert ev.refs == ("sub_1", "in_1Pgc6tB7WZ01zgkWu9fdqL6I") and ev.tx_id == TX
    assert ev.provider_customer == "cus_QXg1o8vcGmoR32"
    assert ev.current_period_end_ms == 1721954054 * 1000  # the paid line's period


def test_an_event_about_an_object_without_a_reader(stripe_fixtures3: dict[str, Any]) -> None:
    plan_created = stripe_fixtures3["event"]
    ev = STRIPE.normalize(json.dumps(plan_created).encode(), "test")
    assert ev.type == E.UNMATCHED and ev.provider_type == "plan.created"


@pytest.mark.parametrize(
    ("stripe_type", "status", "expected"),
    [
        ("refund.created", "succeeded", E.PAYMENT_REFUNDED),
        ("charge.refund.updated", "failed", E.PAYMENT_REFUND_FAILED),
        ("refund.updated", "pending", E.UNMATCHED),
    ],
)
def test_a_refund(example: Any, stripe_type: str, status: str, expected: E) -> None:
    obj = example("refund", status=status, metadata={"refundId": "rf_1"})
    ev = normalize(example, stripe_type, obj)
    assert ev.type == expected and ev.refs == ("ch_1PgafuB7WZ01zgkWXYmPNZs8",)
    assert ev.provider_refund is not None and ev.provider_refund.id == obj["id"]
    assert (ev.provider_refund.amount_minor, ev.provider_refund.tag) == (100, "rf_1")
    if expected != E.UNMATCHED:
        assert ev.refund == Refund(100, of="re_1Pgc72B7WZ01zgkWqPvrRrPE")


def test_an_early_fraud_warning(example: Any) -> None:
    obj = example("radar.early_fraud_warning")
    ev = normalize(example, "radar.early_fraud_warning.created", obj)
    assert ev.type == E.PAYMENT_DISPUTE_WARNING and ev.payment_status is None
    assert ev.refs == ("ch_1234",) and ev.change == "issfr_1Pgc79B7WZ01zgkWxwDzEIPX"
    assert ev.amount_minor is None  # a warning states no amount


def test_a_partial_dispute_lost(example: Any) -> None:
    obj = example("dispute", payment_intent="pi_1", status="lost", amount=400)
    ev = normalize(example, "charge.dispute.closed", obj)
    assert (ev.type, ev.payment_status) == (E.PAYMENT_DISPUTE_CLOSED, S.REFUNDED)
    assert ev.refund == Refund(400, of=obj["id"]) and ev.change == obj["id"]
