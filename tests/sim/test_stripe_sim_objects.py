"""The simulator's objects have Stripe's shapes (the keys of fixtures3.json), and every
trigger event normalizes to the type it was made for."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from edge.providers.stripe import STRIPE
from edge.sim.stripe import SUPPORTED_TRIGGERS, build_event, event_for_trigger, objects

FIXTURES = Path(__file__).resolve().parents[2] / ".." / "shared/provider-data/stripe/fixtures3.json"


@cache
def stripe_keys(name: str) -> set[str]:
    return set(json.loads(FIXTURES.read_text())["resources"][name])


def built() -> dict[str, dict[str, Any]]:
    session = objects.checkout_session(
        session_id=objects.new_id("cs", False), livemode=False, mode="payment", amount_total=100,
        currency="eur", success_url="https://s", cancel_url=None, url="http://sim/c/pay/x",
    )  # fmt: skip
    intent = objects.payment_intent(livemode=False, amount=100, currency="eur")
    charge = objects.charge(
        livemode=False, amount=100, currency="eur", payment_intent_id=intent["id"]
    )
    sub = objects.subscription(
        livemode=False, customer_id="cus_1", amount=900, currency="eur", interval="month",
        product_name="Pro",
    )  # fmt: skip
    return {
        "checkout.session": session,
        "payment_intent": intent,
        "charge": charge,
        "refund": objects.refund(charge_obj=charge, amount=50),
        "dispute": objects.dispute(charge_obj=charge),
        "customer": objects.customer(livemode=False),
        "subscription": sub,
        "invoice": objects.invoice(
            subscription_obj=sub, billing_reason="subscription_create", paid=True
        ),
        "billing_portal.session": objects.billing_portal_session(
            livemode=False, customer_id="cus_1", return_url=None, url_base="http://sim"
        ),
        "event": build_event("charge.refunded", charge, livemode=False),
    }


@pytest.mark.parametrize("name", sorted(built()))
def test_objects_have_stripes_keys(name: str) -> None:
    obj = built()[name]
    assert set(obj) == stripe_keys(name)
    assert obj["object"] == name


def test_nested_lists_have_stripes_keys() -> None:
    resources = json.loads(FIXTURES.read_text())["resources"]
    made = built()
    for name, list_key in (("subscription", "items"), ("invoice", "lines")):
        ours = made[name][list_key]["data"][0]
        theirs = resources[name][list_key]["data"][0]
        assert set(ours) == set(theirs), name


def test_webhook_endpoint_adds_only_the_creation_time_secret() -> None:
    endpoint = objects.webhook_endpoint(
        livemode=False, url="http://x", enabled_events=["*"], secret="whsec_1"
    )
    assert set(endpoint) == stripe_keys("webhook_endpoint") | {"secret"}


TX = {
    "id": "tx_01JD0000000000000000000002", "amount": 1999, "currency": "EUR", "isTest": True,
    "metadata": {"customerRef": "user-7"}, "customerRef": "user-7", "providerRef": None,
    "kind": "payment", "interval": None, "subscriptionRef": None, "providerCustomer": None,
}  # fmt: skip
SUB_TX = {**TX, "kind": "subscription", "interval": "month", "providerRef": "cs_test_abc",
          "subscriptionRef": "sub_123", "providerCustomer": "cus_123"}  # fmt: skip


@pytest.mark.parametrize("normalized_type", SUPPORTED_TRIGGERS)
@pytest.mark.parametrize("tx", [TX, SUB_TX], ids=["payment", "subscription"])
def test_trigger_events_normalize_to_their_type(normalized_type: str, tx: dict[str, Any]) -> None:
    event = event_for_trigger(normalized_type, tx)
    assert set(event) == stripe_keys("event") and event["livemode"] is False
    ev = STRIPE.normalize(json.dumps(event).encode(), "test")
    assert ev.type == normalized_type
    assert ev.tx_id == tx["id"] and ev.customer_ref == "user-7"
    if ev.subscription_ref and tx["subscriptionRef"]:
        assert ev.subscription_ref == tx["subscriptionRef"]


def test_trigger_uses_the_transactions_own_ids() -> None:
    ev = STRIPE.normalize(
        json.dumps(event_for_trigger("payment.succeeded", SUB_TX)).encode(), "test"
    )
    assert ev.refs == ("cs_test_abc",) and ev.starts_subscription
    assert (ev.subscription_ref, ev.provider_customer) == ("sub_123", "cus_123")
    assert (ev.amount_minor, ev.currency) == (1999, "EUR")


def test_trigger_must_cover_the_required_types() -> None:
    required = {
        "payment.succeeded", "payment.processing", "payment.failed", "payment.attempt_failed",
        "checkout.expired", "payment.refunded", "payment.partially_refunded", "payment.disputed",
        "payment.dispute_closed", "subscription.payment_succeeded", "subscription.payment_failed",
        "subscription.past_due", "subscription.canceled", "subscription.updated",
    }  # fmt: skip
    assert required <= set(SUPPORTED_TRIGGERS)


def test_unknown_trigger_names_the_supported_ones() -> None:
    with pytest.raises(ValueError, match="payment.succeeded"):
        event_for_trigger("manual.marked_paid", TX)
