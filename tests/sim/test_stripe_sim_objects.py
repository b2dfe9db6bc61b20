"""The simulator's objects: the fields the node reads, in the declared API version's places,
and every trigger event normalizes to the type it was made for. Their full shapes are checked
against the stripe SDK in tests/conformance."""

from __future__ import annotations

import json
from typing import Any

import pytest

from edge.providers.stripe import STRIPE
from edge.sim.stripe import SUPPORTED_TRIGGERS, build_event, event_for_trigger, objects


def subscription() -> dict[str, Any]:
    return objects.subscription(
        livemode=False, customer_id="cus_1", amount=900, currency="EUR", interval="year",
        product_name="Pro", metadata={"txId": "tx_1"},
    )  # fmt: skip


def test_a_hosted_session_is_open_with_its_url() -> None:
    session = objects.checkout_session(
        session_id="cs_test_1", livemode=False, mode="payment", amount_total=100,
        currency="EUR", success_url="https://s", cancel_url=None, url="http://sim/c/pay/cs_test_1",
    )  # fmt: skip
    assert (session["status"], session["payment_status"]) == ("open", "unpaid")
    assert session["ui_mode"] == "hosted_page" and session["url"] == "http://sim/c/pay/cs_test_1"
    assert session["currency"] == "eur" and session["object"] == "checkout.session"


def test_a_subscription_items_period_and_plan() -> None:
    sub = subscription()
    item = sub["items"]["data"][0]
    assert "current_period_end" not in sub  # basil and later: on the item
    assert item["current_period_end"] == objects.period_end(item["current_period_start"], "year")
    price, plan = item["price"], item["plan"]
    assert (price["unit_amount"], price["currency"], price["recurring"]["interval"]) == (
        900, "eur", "year",
    )  # fmt: skip
    assert plan["object"] == "plan" and plan["id"] == price["id"]  # the legacy mirror
    assert (plan["amount"], plan["interval"], plan["product"]) == (900, "year", price["product"])


def test_an_invoice_names_its_subscription_only_under_parent() -> None:
    sub = subscription()
    invoice = objects.invoice(subscription_obj=sub, billing_reason="subscription_create", paid=True)
    assert "subscription" not in invoice
    assert invoice["parent"]["subscription_details"] == {
        "metadata": {"txId": "tx_1"}, "subscription": sub["id"],
    }  # fmt: skip
    line = invoice["lines"]["data"][0]
    assert line["parent"]["subscription_item_details"]["subscription"] == sub["id"]
    assert (invoice["amount_paid"], invoice["status"]) == (900, "paid")
    failed = objects.invoice(subscription_obj=sub, billing_reason="subscription_cycle", paid=False)
    assert (failed["amount_paid"], failed["amount_due"], failed["status"]) == (0, 900, "open")


def test_events_carry_the_declared_api_version() -> None:
    charge = objects.charge(livemode=True, amount=100, currency="eur", payment_intent_id="pi_1")
    event = build_event("charge.refunded", charge, livemode=True)
    assert event["api_version"] == objects.API_VERSION and event["livemode"] is True
    charge["amount"] = 5  # the event keeps its own copy
    assert event["data"]["object"]["amount"] == 100


TX = {
    "id": "tx_01JD0000000000000000000002", "amount": 1999, "currency": "EUR", "isTest": True,
    "metadata": {"customerRef": "user-7"}, "customerRef": "user-7", "providerRef": "cs_test_1",
    "kind": "payment", "interval": None, "subscriptionRef": None, "providerCustomer": None,
}  # fmt: skip
PAID_TX = {**TX, "providerRef": "cs_test_paid"}
SUB_TX = {**TX, "kind": "subscription", "interval": "month", "providerRef": "cs_test_abc",
          "subscriptionRef": "sub_123", "providerCustomer": "cus_123"}  # fmt: skip


def own_objects(tx: dict[str, Any]) -> set[str]:
    """The Stripe objects of the transaction: its session, and what Stripe ties to it (the
    simulator's ids for them: objects.derived_id)."""
    session = tx["providerRef"]
    intent = objects.derived_id("pi", session)
    sub = tx["subscriptionRef"] or objects.derived_id("sub", session)
    return {session, intent, objects.derived_id("ch", intent), sub}


@pytest.mark.parametrize("normalized_type", SUPPORTED_TRIGGERS)
@pytest.mark.parametrize("tx", [TX, SUB_TX], ids=["payment", "subscription"])
def test_trigger_events_are_about_the_transactions_own_objects(
    normalized_type: str, tx: dict[str, Any]
) -> None:
    """The node matches an event by the objects it linked, never by an echoed id (CONTRACT
    4.3): each trigger names the transaction's session or what Stripe ties to it, and states the
    transaction's own amount. A dispute and a warning carry no metadata in Stripe (they name the
    charge and the payment intent), nor does a refund made in Stripe's dashboard (the failed
    one), so they name no txId either."""
    event = event_for_trigger(normalized_type, tx)
    assert event["object"] == "event" and event["livemode"] is False
    ev = STRIPE.normalize(json.dumps(event).encode(), "test")
    assert ev.type == normalized_type
    assert set(ev.refs) & own_objects(tx), ev.refs
    if not normalized_type.startswith(("payment.dispute", "payment.refund_failed")):
        assert ev.tx_id == tx["id"] and ev.customer_ref == "user-7"
    if ev.subscription_ref and tx["subscriptionRef"]:
        assert ev.subscription_ref == tx["subscriptionRef"]
    if ev.amount_minor is not None and ev.refund is None:
        assert (ev.amount_minor, ev.currency) == (tx["amount"], tx["currency"])


def test_trigger_uses_the_transactions_own_ids() -> None:
    ev = STRIPE.normalize(
        json.dumps(event_for_trigger("payment.succeeded", SUB_TX)).encode(), "test"
    )
    assert ev.refs == ("cs_test_abc",) and ev.starts_subscription
    assert (ev.subscription_ref, ev.provider_customer) == ("sub_123", "cus_123")
    assert (ev.amount_minor, ev.currency) == (1999, "EUR")
    paid = STRIPE.normalize(
        json.dumps(event_for_trigger("payment.succeeded", PAID_TX)).encode(), "test"
    )
    refund = STRIPE.normalize(
        json.dumps(event_for_trigger("payment.refunded", PAID_TX)).encode(), "test"
    )
    # the refund names the payment intent the payment linked
    assert paid.link_refs[0] in refund.refs
    assert refund.refund is not None and refund.refund.amount == 1999


@pytest.mark.parametrize(
    ("amount", "currency", "stripe_amount"),
    [(1999, "EUR", 1999), (500, "JPY", 500), (12340, "KWD", 12340), (15, "ISK", 1500)],
)
def test_trigger_amounts_are_in_stripes_units(
    amount: int, currency: str, stripe_amount: int
) -> None:
    """https://docs.stripe.com/currencies: zero-decimal currencies in whole units, three-decimal
    in thousandths, ISK as two-decimal ("an ISK amount of 100 will continue to represent 1
    krona", support.stripe.com/questions/deprecation-of-fractional-isk-charges-and-refunds)."""
    tx = {**PAID_TX, "amount": amount, "currency": currency}
    event = event_for_trigger("payment.succeeded", tx)
    assert event["data"]["object"]["amount_total"] == stripe_amount
    ev = STRIPE.normalize(json.dumps(event).encode(), "test")
    assert (ev.amount_minor, ev.currency) == (amount, currency)


def test_trigger_must_cover_the_required_types() -> None:
    required = {
        "payment.succeeded", "payment.processing", "payment.failed", "payment.attempt_failed",
        "checkout.expired", "payment.refunded", "payment.partially_refunded", "payment.disputed",
        "payment.dispute_closed", "subscription.payment_succeeded", "subscription.payment_failed",
        "subscription.past_due", "subscription.canceled", "subscription.updated",
        "payment.refund_failed", "payment.dispute_warning",
    }  # fmt: skip
    assert required <= set(SUPPORTED_TRIGGERS)


def test_unknown_trigger_names_the_supported_ones() -> None:
    with pytest.raises(ValueError, match="payment.succeeded"):
        event_for_trigger("manual.marked_paid", TX)
