"""The SDK walker rejects what Stripe would not send: a negative control for the shape checks."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import stripe
from stripe.params.checkout import SessionCreateParams

from conformance.stripe_sdk import API_VERSION, object_issues, param_issues, resource_class
from edge.sim.stripe import build_event, objects


def session() -> dict[str, Any]:
    return objects.checkout_session(
        session_id="cs_test_1", livemode=False, mode="payment", amount_total=100,
        currency="eur", success_url="https://s", cancel_url=None, url="http://sim/c/pay/cs_test_1",
    )  # fmt: skip


def subscription() -> dict[str, Any]:
    return objects.subscription(
        livemode=False, customer_id="cus_1", amount=900, currency="eur", interval="month",
        product_name="Pro",
    )  # fmt: skip


def test_the_sdk_pins_the_declared_api_version() -> None:
    assert API_VERSION == objects.API_VERSION
    assert resource_class("checkout.session") is stripe.checkout.Session


def test_good_objects_pass() -> None:
    assert object_issues(session()) == [] and object_issues(subscription()) == []


def spoil(obj: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A copy of ``obj`` with ``value`` at the dotted ``path`` (``items.data.0.price.x``)."""
    spoilt = copy.deepcopy(obj)
    *parents, last = path.split(".")
    node: Any = spoilt
    for key in parents:
        node = node[int(key)] if isinstance(node, list) else node[key]
    node[last] = value
    return spoilt


@pytest.mark.parametrize(
    ("make", "path", "value", "finding"),
    [
        (session, "total_details.surprise", 1, "total_details.surprise: unknown field"),
        (session, "amount_total", "100", "amount_total: expected int, got str"),
        (session, "payment_status", "pending", "payment_status: 'pending' is not one of"),
        (session, "ui_mode", "hosted", "ui_mode: 'hosted' is not one of"),
        (session, "total_details.amount_tax", None, "amount_tax: null in a non-nullable"),
        (session, "livemode", 0, "livemode: expected bool, got int"),
        (session, "metadata", {"n": 5}, "metadata.n: expected str"),
        (subscription, "items.data.0.price.object", "plan", "price.object: 'plan' is not one of"),
        (session, "customer", 7, "customer:"),
        (subscription, "items.data.0.price.recurring.interval", "fortnight", "'fortnight'"),
        (subscription, "items.data.0.plan", None, "items.data[0].plan: null in a non-nullable"),
        (subscription, "items.data.0.price.unit_amount_decimal", "9,00", "expected Decimal"),
        (subscription, "items.has_more", "no", "items.has_more: expected bool"),
    ],
)
def test_each_kind_of_mismatch_is_found(make: Any, path: str, value: Any, finding: str) -> None:
    issues = object_issues(spoil(make(), path, value))
    assert len(issues) == 1 and finding in issues[0], issues


def test_a_missing_required_field_is_found_unless_the_object_is_a_trimmed_example() -> None:
    trimmed = session()
    del trimmed["automatic_tax"], trimmed["livemode"]
    assert sorted(object_issues(trimmed)) == [
        "<root>.automatic_tax: required field of Session missing",
        "<root>.livemode: required field of Session missing",
    ]
    assert object_issues(trimmed, partial=True) == []
    assert object_issues({"object": "who_knows"}) == ["<root>: not a known API object"]


def test_an_expanded_object_is_checked_against_its_class() -> None:
    expanded = {"id": "prod_1", "object": "product", "name": 1}
    issues = object_issues(spoil(subscription(), "items.data.0.price.product", expanded))
    assert "<root>.items.data[0].price.product.name: expected str, got int 1" in issues
    assert "<root>.items.data[0].price.product.active: required field of Product missing" in issues


def test_an_events_object_is_checked_against_its_own_class() -> None:
    event = build_event("checkout.session.completed", session(), livemode=False)
    assert object_issues(event) == []
    event["data"]["object"]["invented"] = True
    event["request"]["where"] = "here"
    assert sorted(object_issues(event, "evt")) == [
        "evt.data.object.invented: unknown field of Session",
        "evt.request.where: unknown field of Event.Request",
    ]
    assert object_issues(build_event("charge.bounced", session(), livemode=False)) != []


def test_request_params_are_checked_against_the_create_params() -> None:
    params = {
        "mode": "payment", "success_url": "https://s",
        "line_items": [{"quantity": 1, "price_data": {
            "currency": "eur", "unit_amount": 100, "product_data": {"name": "Pro"},
        }}],
    }  # fmt: skip
    assert param_issues(params, SessionCreateParams) == []
    bad = spoil(params, "line_items.0.price_data.product_data.title", "Pro")
    bad.update(mode="donation", idempotency_key="k")
    assert sorted(param_issues(bad, SessionCreateParams, "p")) == [
        "p.idempotency_key: unknown field of SessionCreateParams",
        "p.line_items[0].price_data.product_data.title: unknown field of"
        " SessionCreateParamsLineItemPriceDataProductData",
        "p.mode: 'donation' is not one of ['payment', 'setup', 'subscription']",
    ]
