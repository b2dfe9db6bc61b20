"""Stripe's minor units against the node's (PROVIDERS.md S7)."""

from __future__ import annotations

from typing import cast

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from edge.domain.money import EXPONENTS
from edge.errors import Conflict
from edge.providers.base import CheckoutRequest
from edge.providers.stripe.adapter import checkout_params
from edge.providers.stripe.events import normalize
from edge.providers.stripe.money import charge_problem, from_stripe, stripe_exponent, to_stripe


@pytest.mark.parametrize(
    ("currency", "node_minor", "stripe_amount"),
    [
        ("JPY", 500, 500),  # zero-decimal on both sides
        ("EUR", 1999, 1999),  # two-decimal on both sides
        ("KWD", 1250, 1250),  # three-decimal: thousandths on both sides
        ("ISK", 100, 10000),  # ISO: 0 decimals; Stripe keeps two: 100 = 1 krona
        ("MGA", 50000, 500),  # ISO: 2 decimals; Stripe: zero-decimal
    ],
)
def test_conversion_both_ways(currency: str, node_minor: int, stripe_amount: int) -> None:
    assert to_stripe(node_minor, currency) == stripe_amount
    assert from_stripe(stripe_amount, currency) == node_minor


def test_exponents() -> None:
    assert [stripe_exponent(c) for c in ("JPY", "MGA", "EUR", "ISK", "BHD")] == [0, 0, 2, 2, 3]


def test_fractions_stripe_cannot_express_are_none() -> None:
    assert to_stripe(150, "MGA") is None  # 1.50 MGA: Stripe charges whole ariary
    assert from_stripe(150, "ISK") is None  # 1.50 ISK: the node stores whole kronur


@given(st.sampled_from(sorted(EXPONENTS)), st.integers(min_value=0, max_value=10**15))
def test_round_trip_for_every_amount(currency: str, amount: int) -> None:
    """Whichever side counts in coarser units, its every amount survives the round trip."""
    if stripe_exponent(currency) <= EXPONENTS[currency]:
        node_minor = from_stripe(amount, currency)
        assert node_minor is not None
        assert to_stripe(node_minor, currency) == amount
    else:
        stripe_amount = to_stripe(amount, currency)
        assert stripe_amount is not None
        assert from_stripe(stripe_amount, currency) == amount


def _request(amount: int, currency: str) -> CheckoutRequest:
    tx = {"id": "tx_01J0000000000000000000000", "kind": "payment", "amount": amount}
    return CheckoutRequest(
        tx={**tx, "currency": currency, "quantity": 1},
        product={"name": "A book"},
        credentials={},
        success_url="https://shop.example/ok",
        cancel_url="https://shop.example/",
        http=cast(httpx.AsyncClient, None),  # checkout_params makes no call
    )


@pytest.mark.parametrize(
    ("currency", "node_minor", "unit_amount"),
    [("ISK", 1500, 150000), ("MGA", 1000000, 10000), ("JPY", 800, 800), ("BHD", 1500, 1500)],
)
def test_checkout_sends_stripe_units(currency: str, node_minor: int, unit_amount: int) -> None:
    params = checkout_params(_request(node_minor, currency))
    assert params["line_items"][0]["price_data"]["unit_amount"] == unit_amount


def test_checkout_refuses_a_fraction_stripe_cannot_charge() -> None:
    with pytest.raises(Conflict):
        checkout_params(_request(150, "MGA"))


@pytest.mark.parametrize(
    ("currency", "stripe_amount", "node_minor"),
    [("ISK", 150000, 1500), ("MGA", 10000, 1000000), ("EUR", 1999, 1999), ("OMR", 1500, 1500)],
)
def test_events_read_stripe_units(currency: str, stripe_amount: int, node_minor: int) -> None:
    body = (
        b'{"id": "evt_1", "type": "checkout.session.completed", "created": 1700000000,'
        b' "data": {"object": {"object": "checkout.session", "id": "cs_1",'
        b' "payment_status": "paid", "amount_total": %d, "currency": "%s"}}}'
        % (stripe_amount, currency.lower().encode())
    )
    event = normalize(body)
    assert (event.amount_minor, event.currency) == (node_minor, currency)
    assert event.dedup_ids == ("evt_1",)


@pytest.mark.parametrize(
    ("minor", "currency", "problem"),
    [
        (12340, "KWD", None),
        (12345, "KWD", "the last of three decimals must be 0"),  # docs.stripe.com/currencies
        (99_999_999, "EUR", None),  # "up to eight digits" (stripe-python 16.1.0)
        (100_000_000, "EUR", "at most 99,999,999"),
        (99_999_999, "JPY", None),
        (100_000_000, "JPY", "at most 99,999,999"),
        (1_000_000, "ISK", "at most 99,999,999"),  # Stripe keeps ISK two-decimal: x100
        (150, "MGA", "whole units"),  # ISO's two decimals; Stripe's zero
    ],
)
def test_what_stripe_refuses_to_charge_is_said_before_a_checkout(minor, currency, problem):
    found = charge_problem(minor, currency)
    assert (found is None) if problem is None else (found is not None and problem in found)
