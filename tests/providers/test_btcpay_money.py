"""BTCPay's decimal strings both ways (CONTRACT 4.3): the invoice currency's own decimals, for a
zero-, two- and three-decimal currency."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from edge.domain.money import EXPONENTS
from edge.providers.btcpay.money import at_rate, from_btcpay, to_btcpay


@pytest.mark.parametrize(
    ("minor", "currency", "value"),
    [
        (1999, "EUR", "19.99"),
        (5, "USD", "0.05"),
        (1500, "JPY", "1500"),
        (12345, "BHD", "12.345"),
        (0, "EUR", "0.00"),
    ],
)
def test_amounts_go_out_as_decimal_strings(minor, currency, value):
    assert to_btcpay(minor, currency) == value
    assert from_btcpay(value, currency) == minor


@pytest.mark.parametrize(
    ("value", "currency"),
    [
        ("19.999", "EUR"),  # a fraction EUR has no minor unit for
        ("1.5", "JPY"),
        ("1e3", "EUR"),
        ("-1.00", "EUR"),
        ("", "EUR"),
        (19.99, "EUR"),
        ("19.99", "ZZZ"),
        ("19.99", None),
    ],
)
def test_what_is_not_an_amount_reads_as_none(value, currency):
    assert from_btcpay(value, currency) is None


@given(st.integers(0, 10**15), st.sampled_from(sorted(EXPONENTS)))
def test_both_ways_agree(minor, currency):
    assert from_btcpay(to_btcpay(minor, currency), currency) == minor


@pytest.mark.parametrize(
    ("value", "rate", "currency", "minor"),
    [
        ("0.00010000", "100000", "EUR", 1000),  # a BTC amount at the invoice's rate
        ("0.00012345", "64392.23", "USD", 795),  # 7.949...: half up to the cent
        ("0.5", "3000000", "JPY", 1500000),
        ("0.00000001", "64392.23", "BHD", 1),
        ("1", "nope", "EUR", None),
        ("1.5", "2", "ZZZ", None),
        (1.5, "2", "EUR", None),  # Greenfield's decimals are strings
    ],
)
def test_a_payment_method_amount_at_its_rate(value, rate, currency, minor):
    assert at_rate(value, rate, currency) == minor
