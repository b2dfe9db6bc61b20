"""Paddle's amounts: integer strings in the lowest denomination, which for every currency Paddle
takes is the ISO minor unit the node keeps; currencies Paddle does not take are refused."""

from __future__ import annotations

import pytest

from edge.domain.money import EXPONENTS
from edge.providers.paddle.money import CURRENCIES, from_paddle, to_paddle


@pytest.mark.parametrize(
    ("minor", "currency", "wire"),
    [
        (1999, "EUR", "1999"),  # two decimals: 19.99 EUR
        (1000, "JPY", "1000"),  # none: 1000 JPY, not 10.00
        (50000, "KRW", "50000"),
        (0, "USD", "0"),
    ],
)
def test_both_ways(minor: int, currency: str, wire: str) -> None:
    assert to_paddle(minor, currency) == wire
    assert from_paddle(wire, currency) == minor


def test_a_three_decimal_currency_is_not_taken() -> None:
    assert EXPONENTS["KWD"] == 3
    assert to_paddle(1500, "KWD") is None  # Paddle takes no three-decimal currency
    # read by its ISO exponent, should Paddle ever send one
    assert from_paddle("1500", "KWD") == 1500


@pytest.mark.parametrize(
    ("amount", "currency"),
    [
        ("19.99", "EUR"),  # a decimal is not Paddle's form
        ("-100", "EUR"),
        ("0100", "EUR"),
        ("", "EUR"),
        (1999, "EUR"),  # a number, not a string
        ("1999", "XXX"),
        ("1999", None),
    ],
)
def test_what_is_not_an_amount(amount: object, currency: object) -> None:
    assert from_paddle(amount, currency) is None


def test_refusals_when_sending() -> None:
    assert to_paddle(-1, "EUR") is None
    assert to_paddle(100, "XOF") is None  # an ISO currency Paddle does not take


def test_every_currency_paddle_takes_is_one_the_node_knows() -> None:
    assert set(EXPONENTS) >= CURRENCIES
    assert {c for c in CURRENCIES if EXPONENTS[c] == 0} == {"JPY", "KRW", "VND"}
