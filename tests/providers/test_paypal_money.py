"""PayPal's decimal strings both ways (CONTRACT 4.3): no decimals for JPY, HUF and TWD, two for
the rest, no three-decimal currency (PayPal takes none)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from edge.providers.paypal.money import CURRENCIES, from_paypal, to_paypal


@pytest.mark.parametrize(
    ("minor", "currency", "value"),
    [
        (1999, "EUR", "19.99"),
        (5, "USD", "0.05"),
        (1000, "JPY", "1000"),  # zero-decimal in ISO and at PayPal
        (123400, "HUF", "1234"),  # two in ISO, none at PayPal
        (100, "TWD", "1"),
    ],
)
def test_amounts_go_out_in_paypal_decimals(minor, currency, value):
    assert to_paypal(minor, currency) == value
    assert from_paypal(value, currency) == minor


@pytest.mark.parametrize(
    ("minor", "currency"),
    [
        (123450, "HUF"),  # a fraction PayPal has no decimals for
        (1000, "BHD"),  # three decimals: PayPal does not take it
        (1000, "XOF"),  # not a PayPal currency
        (-1, "EUR"),
    ],
)
def test_what_paypal_cannot_charge_is_refused(minor, currency):
    assert to_paypal(minor, currency) is None


@pytest.mark.parametrize(
    ("value", "currency"),
    [("1.5", "JPY"), ("1.999", "USD"), ("01.00", "USD"), ("1e3", "USD"), (10, "USD"), ("1", "ZZZ")],
)
def test_answers_that_are_not_amounts_are_none(value, currency):
    assert from_paypal(value, currency) is None


@given(st.integers(min_value=0, max_value=10**12), st.sampled_from(sorted(CURRENCIES)))
def test_every_chargeable_amount_round_trips(minor, currency):
    value = to_paypal(minor, currency)
    if value is not None:
        assert from_paypal(value, currency) == minor
