import json
from decimal import Decimal

import pytest

from edge.domain.errors import InvalidInput
from edge.domain.money import (
    EXPONENTS,
    MAX_MINOR,
    MoneyError,
    exponent,
    spelled,
    to_major,
    to_minor,
    to_wire,
)

D = Decimal


def test_exponent_table():
    assert len(EXPONENTS) >= 150
    expected = {"JPY": 0, "EUR": 2, "USD": 2, "GBP": 2, "BHD": 3, "KWD": 3, "JOD": 3, "OMR": 3,
                "TND": 3, "IQD": 3, "LYD": 3, "CLF": 4, "UYW": 4, "ISK": 0, "KRW": 0, "VND": 0,
                "XOF": 0, "XAF": 0, "XPF": 0, "XCD": 2, "CLP": 0, "PYG": 0, "UGX": 0,
                "HUF": 2}  # fmt: skip
    for code, exp in expected.items():
        assert EXPONENTS[code] == exp == exponent(code)
    for code, exp in EXPONENTS.items():
        assert len(code) == 3 and code.isalpha() and code.isupper() and exp in (0, 2, 3, 4)
    with pytest.raises(TypeError):
        EXPONENTS["ABC"] = 2  # type: ignore[index]


@pytest.mark.parametrize("bad", ["eur", "Eur", "EURO", "", "XAU", "XXX", "HRK", None, 978])
def test_exponent_rejects(bad):
    with pytest.raises(MoneyError) as e:
        exponent(bad)
    assert e.value.code == "invalid_currency" and e.value.field == "currency"
    assert isinstance(e.value, InvalidInput)


@pytest.mark.parametrize(
    "amount,currency,minor",
    [
        (D("19.99"), "EUR", 1999), (D("19.990"), "EUR", 1999), (D("19.9"), "EUR", 1990),
        (19, "EUR", 1900), (D("19"), "EUR", 1900), (D("1.9E+1"), "EUR", 1900),
        (500, "JPY", 500), (D("500.0"), "JPY", 500), (D("5E+2"), "JPY", 500),
        (D("1.234"), "BHD", 1234), (D("0.0001"), "CLF", 1), (0, "EUR", 0), (D("0"), "EUR", 0),
        (D("0.00"), "EUR", 0), (D("-0"), "EUR", 0), (D("0E-50"), "EUR", 0),
        (D("0E+999999"), "JPY", 0), (MAX_MINOR, "JPY", MAX_MINOR),
        (D("10000000000000.00"), "EUR", MAX_MINOR),
    ],
)  # fmt: skip
def test_to_minor(amount, currency, minor):
    got = to_minor(amount, currency)
    assert got == minor and type(got) is int


@pytest.mark.parametrize(
    "amount,currency",
    [
        (19.99, "EUR"), (True, "EUR"), (False, "EUR"), ("19.99", "EUR"), (None, "EUR"),
        (D("NaN"), "EUR"), (D("sNaN"), "EUR"), (D("Infinity"), "EUR"), (D("-Infinity"), "EUR"),
        (-1, "EUR"), (D("-0.01"), "EUR"), (D("19.999"), "EUR"), (D("0.5"), "JPY"),
        (D("1.2345"), "BHD"), (D("0.00001"), "CLF"), (D("1E-999999"), "EUR"),
        (MAX_MINOR + 1, "JPY"), (D("10000000000000.01"), "EUR"), (D("1E+999999"), "EUR"),
        (10**100, "EUR"), (D("1.00000000000000000000000000000000001"), "EUR"),
    ],
)  # fmt: skip
def test_to_minor_rejects(amount, currency):
    with pytest.raises(MoneyError) as e:
        to_minor(amount, currency, field="price")
    assert e.value.code == "invalid_amount" and e.value.field == "price"


def test_to_minor_unknown_currency():
    with pytest.raises(MoneyError) as e:
        to_minor(D("1"), "ZZZ")
    assert e.value.code == "invalid_currency"


def test_wire_shapes():
    assert to_wire(1999, "EUR") == 19.99 and type(to_wire(1999, "EUR")) is float
    assert to_wire(500, "JPY") == 500 and type(to_wire(500, "JPY")) is int
    assert to_wire(1234, "BHD") == 1.234
    assert to_wire(900, "EUR") == 9.0
    assert json.dumps({"amount": to_wire(1999, "EUR")}) == '{"amount": 19.99}'
    assert to_major(1999, "EUR") == D("19.99") and str(to_major(1999, "EUR")) == "19.99"
    assert to_major(500, "JPY") == 500


@pytest.mark.parametrize("bad", [1.0, True, "1", D("1")])
def test_to_major_wire_require_int(bad):
    with pytest.raises(TypeError):
        to_major(bad, "EUR")
    with pytest.raises(TypeError):
        to_wire(bad, "EUR")


SAMPLES = [0, 1, 7, 10, 99, 100, 101, 1999, 12345, 99_999_999, 123_456_789_012_345,
           999_999_999_999_999, MAX_MINOR]  # fmt: skip


@pytest.mark.parametrize("currency", sorted(EXPONENTS))
def test_round_trip_every_currency(currency):
    for minor in SAMPLES:
        major = to_major(minor, currency)
        assert to_minor(major, currency) == minor
        wire = to_wire(minor, currency)
        text = json.dumps(wire)
        parsed = json.loads(text, parse_float=Decimal)
        assert to_minor(parsed, currency) == minor, (currency, minor, text)
        assert D(text) == major


def test_one_spelling_of_an_amount_whatever_its_digits():
    """5, 5.0 and 5.00 ask for the same amount; an amount past any currency's exponent is
    spelled, not an overflow (refused where it is used)."""
    assert spelled(5) == spelled(D("5.0")) == spelled(D("5.00")) == "5"
    assert spelled(D("5.10")) == "5.1" and spelled(None) is None
    assert spelled(D("1E+999999")) == "1E+999999"
