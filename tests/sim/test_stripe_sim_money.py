"""The Stripe simulator refuses the amounts Stripe refuses, in Stripe's error envelope, and makes
Payment Links as Stripe does (HTTP against the simulator; the node's side is in
tests/e2e/test_stripe_price_rules.py and tests/e2e/test_stripe_payment_links.py).

Stripe's rules:
- three-decimal currencies (BHD, JOD, KWD, OMR, TND): "The API supports three-decimal currencies
  for the standard payment flows, including Payment Intents, Refunds, and Disputes. However, to
  ensure compatibility with Stripe's payments partners, these API calls require the
  least-significant (last) digit to be 0. Your integration must round amounts to the nearest
  ten. For example, 5.124 KWD must be rounded to 5120 or 5130."
  (https://web.archive.org/web/20220618095455/https://stripe.com/en-mt/docs/currencies);
- "The amount value supports up to eight digits (e.g., a value of 99999999 for a USD charge of
  $999,999.99)" (stripe-python 16.1.0 params/_payment_intent_create_params.py:123);
- errors: ``{"error": {"type": "invalid_request_error", "code", "param", "message"}}`` with 400,
  the codes ``invalid_charge_amount`` and ``amount_too_large`` being the API's own
  (stripe-python 16.1.0 _payment_intent.py:218,297);
- a refused request is not saved under its Idempotency-Key ("results are only saved if an API
  endpoint started executing", https://docs.stripe.com/api/idempotent_requests).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from edge.providers.stripe import form as stripe_form
from edge.sim.stripe import StripeSimulator

SECRET_KEY = "sk_test_money_0123456789"


@pytest.fixture
async def sim() -> AsyncIterator[StripeSimulator]:
    simulator = StripeSimulator()
    async with simulator.serving():
        yield simulator


async def post(
    sim: StripeSimulator, path: str, params: dict[str, Any], key: str | None = None
) -> httpx.Response:
    headers = {
        "Authorization": f"Bearer {SECRET_KEY}",
        "Content-Type": "application/x-www-form-urlencoded",
    }
    if key:
        headers["Idempotency-Key"] = key
    async with httpx.AsyncClient(base_url=sim.url) as http:
        return await http.post(path, content=stripe_form.encode(params), headers=headers)


def session(currency: str, unit_amount: int, quantity: int = 1) -> dict[str, Any]:
    return {
        "mode": "payment",
        "line_items": [
            {
                "price_data": {
                    "currency": currency,
                    "unit_amount": unit_amount,
                    "product_data": {"name": "Tea"},
                },
                "quantity": quantity,
            }
        ],
        "success_url": "https://shop.example/thanks",
    }


def error_of(answer: httpx.Response) -> dict[str, Any]:
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert error["type"] == "invalid_request_error" and error["message"]
    return dict(error)


@pytest.mark.parametrize("currency", ["bhd", "jod", "kwd", "omr", "tnd"])
async def test_a_three_decimal_amount_must_end_in_zero(sim, currency):
    error = error_of(await post(sim, "/v1/checkout/sessions", session(currency, 12345)))
    assert error["param"] == "line_items[0][price_data][unit_amount]"
    assert error["code"] == "invalid_charge_amount"
    assert "12340" in error["message"] and "12350" in error["message"]  # round to the ten
    ok = await post(sim, "/v1/checkout/sessions", session(currency, 12340))
    assert ok.status_code == 200 and ok.json()["amount_total"] == 12340


async def test_a_two_decimal_amount_may_end_in_any_digit(sim):
    ok = await post(sim, "/v1/checkout/sessions", session("eur", 12345))
    assert ok.status_code == 200


@pytest.mark.parametrize(
    ("currency", "shown"), [("eur", "999,999.99 EUR"), ("jpy", "99,999,999 JPY")]
)
async def test_more_than_eight_digits_is_refused(sim, currency, shown):
    error = error_of(await post(sim, "/v1/checkout/sessions", session(currency, 100_000_000)))
    assert (error["param"], error["code"]) == (
        "line_items[0][price_data][unit_amount]",
        "amount_too_large",
    )
    assert error["message"] == f"Amount must be no more than {shown}."
    most = await post(sim, "/v1/checkout/sessions", session(currency, 99_999_999))
    assert most.status_code == 200 and most.json()["amount_total"] == 99_999_999


async def test_the_limit_is_on_what_the_session_charges(sim):
    error = error_of(await post(sim, "/v1/checkout/sessions", session("eur", 50_000_000, 2)))
    assert (error["param"], error["code"]) == ("line_items[0][quantity]", "amount_too_large")


async def test_a_refused_session_saves_nothing_under_its_idempotency_key(sim):
    refused = await post(sim, "/v1/checkout/sessions", session("kwd", 5124), key="k-1")
    assert refused.status_code == 400
    fixed = await post(sim, "/v1/checkout/sessions", session("kwd", 5120), key="k-1")
    assert fixed.status_code == 200 and "Idempotent-Replayed" not in fixed.headers


async def test_a_payment_link_of_an_amount_stripe_refuses_is_refused(sim):
    link = {
        "line_items": [
            {
                "price_data": {
                    "currency": "omr",
                    "unit_amount": 1001,
                    "product_data": {"name": "Tea"},
                },
                "quantity": 1,
            }
        ]
    }
    error = error_of(await post(sim, "/v1/payment_links", link))
    assert error["code"] == "invalid_charge_amount"


# --- payment links ------------------------------------------------------------------------


def link_params(**changes: Any) -> dict[str, Any]:
    return {
        "line_items": [
            {
                "price_data": {
                    "currency": "eur",
                    "unit_amount": 100,
                    "product_data": {"name": "Coffee"},
                },
                "quantity": 2,
            }
        ],
        "metadata": {"campaign": "spring"},
        "payment_intent_data": {"metadata": {"till": "3"}},
        **changes,
    }


async def open_link(url: str, **query: str) -> str:
    async with httpx.AsyncClient() as buyer:
        opened = await buyer.get(url, params=query)
    assert opened.status_code == 303, opened.text
    return opened.headers["location"].rsplit("/", 1)[-1]


async def test_each_visit_to_a_link_opens_a_session_of_it(sim):
    """https://docs.stripe.com/payment-links/url-parameters: ``client_reference_id`` from the
    address; the link's metadata copied to the session (params/_payment_link_create_params.py:
    75-78), its payment_intent_data metadata to the payment intent (same file: "declaratively
    set metadata on Payment Intents generated from this payment link")."""
    sim.register_endpoint(SECRET_KEY, "http://127.0.0.1:9/nobody")  # deliveries are recorded
    answer = await post(sim, "/v1/payment_links", link_params())
    assert answer.status_code == 200, answer.text
    link = answer.json()
    assert (link["object"], link["active"], link["currency"]) == ("payment_link", True, "eur")
    assert link["metadata"] == {"campaign": "spring"}
    first = await open_link(link["url"], client_reference_id="order-7_b")
    second = await open_link(link["url"])
    assert first != second
    one, two = sim.session(first), sim.session(second)
    assert (one["payment_link"], one["client_reference_id"]) == (link["id"], "order-7_b")
    assert (two["payment_link"], two["client_reference_id"]) == (link["id"], None)
    assert one["metadata"] == {"campaign": "spring"} and one["amount_total"] == 200
    await sim.complete(first)
    paid = sim.session(first)
    assert (paid["status"], paid["payment_status"]) == ("complete", "paid")
    await sim.refund(first)  # a charge was made, with the link's intent metadata
    (refunded,) = [e for e, _ in sim.delivered if e["type"] == "charge.refunded"]
    assert refunded["data"]["object"]["metadata"] == {"till": "3"}


async def test_a_reference_stripe_does_not_take_is_dropped(sim):
    """Letters, digits, ``-`` and ``_``, at most 200 characters; another value is dropped and the
    page still works (third-party account of the rule:
    https://qiita.com/hideokamoto/items/f4dc308337b0ba6e57bd)."""
    link = (await post(sim, "/v1/payment_links", link_params())).json()
    for bad in ["has space", "x" * 201, "tx.1"]:
        opened = await open_link(link["url"], client_reference_id=bad)
        assert sim.session(opened)["client_reference_id"] is None


async def test_a_link_names_a_price_made_before_or_none(sim):
    price = await post(
        sim,
        "/v1/prices",
        {"currency": "eur", "unit_amount": 250, "product_data": {"name": "Cake"}},
    )
    assert price.status_code == 200 and price.json()["object"] == "price"
    line = {"price": price.json()["id"], "quantity": 1}
    link = (await post(sim, "/v1/payment_links", {"line_items": [line]})).json()
    opened = await open_link(link["url"])
    assert sim.session(opened)["amount_total"] == 250
    missing = error_of(
        await post(sim, "/v1/payment_links", {"line_items": [{"price": "price_x", "quantity": 1}]})
    )
    assert (missing["param"], missing["code"]) == ("line_items[0][price]", "resource_missing")
    no_quantity = error_of(
        await post(sim, "/v1/payment_links", {"line_items": [{"price": price.json()["id"]}]})
    )
    assert no_quantity["param"] == "line_items[0][quantity]"
