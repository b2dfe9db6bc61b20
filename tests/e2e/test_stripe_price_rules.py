"""Stripe's money rules, checked by the node when a product is saved (400 ``provider_limit``)
and before a checkout is stored (409 ``amount_not_supported``), so the refusal Stripe would give
at checkout (tests/sim/test_stripe_sim_money.py) is never reached.

- three-decimal currencies: "these API calls require the least-significant (last) digit to be
  0 ... 5.124 KWD must be rounded to 5120 or 5130"
  (https://web.archive.org/web/20220618095455/https://stripe.com/en-mt/docs/currencies);
- "The amount value supports up to eight digits (e.g., a value of 99999999 for a USD charge of
  $999,999.99)" (stripe-python 16.1.0 params/_payment_intent_create_params.py:123).
"""

from __future__ import annotations

import pytest
from support.client import manual_shop, post_checkout
from support.stripe_shop import SECRET_KEY, stripe_shop


def _path(project_id: str, product: str) -> str:
    return f"/api/manage/projects/{project_id}/products/{product}"


@pytest.mark.parametrize(
    ("amount", "currency", "rule"),
    [
        (12.345, "KWD", "0"),  # the last of three decimals
        (0.001, "BHD", "0"),
        (1_000_000.00, "EUR", "eight digits"),
        (100_000_000, "JPY", "eight digits"),
    ],
)
async def test_a_price_stripe_refuses_is_refused_when_the_product_is_saved(
    admin, sim, amount, currency, rule
):
    shop = await stripe_shop(admin, sim)
    body = {"name": "Tea", "kind": "payment", "amount": amount, "currency": currency}
    answer = await admin.http.put(_path(shop.project_id, "tea"), json=body)
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert (error["code"], error["field"]) == ("provider_limit", "amount")
    assert "Stripe" in error["message"] and rule in error["message"]
    assert sim.sessions(SECRET_KEY) == []


async def test_an_override_for_stripe_is_checked_too(admin, sim):
    shop = await stripe_shop(admin, sim)
    body = {
        "name": "Tea", "kind": "payment", "amount": 10, "currency": "KWD",
        "overrides": {"stripe": {"amount": 10.005}},
    }  # fmt: skip
    answer = await admin.http.put(_path(shop.project_id, "tea"), json=body)
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["field"] == "overrides.stripe.amount"


@pytest.mark.parametrize(
    ("amount", "currency", "stripe_amount"),
    [(12.34, "KWD", 12340), (999_999.99, "EUR", 99_999_999), (99_999_999, "JPY", 99_999_999)],
)
async def test_the_prices_stripe_takes_are_saved_and_paid(
    admin, http, sim, amount, currency, stripe_amount
):
    shop = await stripe_shop(admin, sim)
    await admin.product(shop.project_id, "tea", name="Tea", amount=amount, currency=currency)
    answer = await post_checkout(http, "stripe", shop, "tea")
    assert answer.status_code == 201, answer.text
    (session,) = sim.sessions(SECRET_KEY)
    assert (session["amount_total"], session["currency"]) == (stripe_amount, currency.lower())
    await sim.complete(session["id"])
    paid = (await http.get(f"/status/{shop.project_id}/{answer.json()['txId']}")).json()
    assert paid["status"] == "succeeded"


async def test_a_quantity_beyond_stripes_limit_is_refused_before_anything_is_stored(
    admin, http, sim
):
    shop = await stripe_shop(admin, sim)
    await admin.product(shop.project_id, "big", name="Big", amount=600_000, currency="EUR")
    answer = await post_checkout(
        http, "stripe", shop, "big", quantity=2, txId="tx_01JD00000000000000000000Q2"
    )
    assert answer.status_code == 409, answer.text
    assert (answer.json()["error"]["code"], answer.json()["error"]["field"]) == (
        "amount_not_supported",
        "quantity",
    )
    assert sim.sessions(SECRET_KEY) == []
    missing = await http.get(f"/status/{shop.project_id}/tx_01JD00000000000000000000Q2")
    assert missing.status_code == 404


async def test_a_product_saved_before_stripe_was_enabled_is_refused_at_checkout(admin, http, sim):
    """A product saved while only pay-by-mail was enabled: the checkout with Stripe is refused
    before anything is stored, never sent to Stripe."""
    shop = await manual_shop(admin, {"amount": 12.345, "currency": "KWD"})
    await stripe_shop(admin, sim, project_id=shop.project_id)
    answer = await post_checkout(http, "stripe", shop, "book")
    assert answer.status_code == 409, answer.text
    assert answer.json()["error"]["code"] == "amount_not_supported"
    assert sim.sessions(SECRET_KEY) == []
