"""Bounds on callers' numbers and text: never an exception, whatever the input."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from edge.domain.inputs import (
    MAX_DEPTH,
    MAX_DIGITS,
    bounded_int,
    bounded_json_decimal,
    bounded_json_int,
    first_flaw,
    is_text,
)


@given(st.text())
def test_bounded_int_answers_any_text_without_raising(raw):
    value = bounded_int(raw, 0, 10**18)
    assert value is None or (raw.isascii() and raw.isdigit() and value == int(raw))


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("0", 0), ("30", 30), ("31", None), ("-1", None), ("", None), ("٣", None), ("9" * 19, None)],
)
def test_bounded_int_cases(raw, expected):
    assert bounded_int(raw, 0, 30) == expected


def test_an_integer_of_many_digits_is_refused_before_int_parses_it():
    with pytest.raises(ValueError, match="18 digits"):
        json.loads("9" * 5000, parse_int=bounded_json_int)
    assert json.loads("-123456789012345678", parse_int=bounded_json_int) == -123456789012345678


@pytest.mark.parametrize(
    "raw",
    ["1e999999999", "-1E18", "0e999999", "1e-41", "9" * 41 + ".5", "1e99999999999999999999"],
)
def test_a_decimal_number_out_of_range_is_refused_before_anything_works_on_it(raw):
    """``1e999999999`` is short, but ``int()`` of it builds a billion digits on the loop."""
    with pytest.raises(ValueError):
        json.loads(raw, parse_float=bounded_json_decimal)


@given(st.decimals(allow_nan=False, allow_infinity=False))
def test_a_decimal_number_is_read_exactly_or_refused(value):
    raw = str(value)
    assume(any(c in raw for c in ".eE"))  # the rest is an integer, bounded_json_int's
    try:
        read = json.loads(raw, parse_float=bounded_json_decimal)
    except ValueError:
        assert len(raw) > 40 or not -40 <= value.adjusted() < MAX_DIGITS
    else:
        assert read == Decimal(raw) and abs(int(read)) < 10**MAX_DIGITS


def test_text_flaws():
    assert is_text("café ☕") and not is_text("\ud800")
    assert first_flaw({"a": ["ok", {"b": "\udfff"}]}) == "text with a lone surrogate"
    assert first_flaw({"\ud800": 1}) == "text with a lone surrogate"
    deep: object = "leaf"
    for _ in range(MAX_DEPTH + 1):
        deep = [deep]
    assert first_flaw(deep) == f"nesting deeper than {MAX_DEPTH}"
    assert first_flaw({"fine": [1, 2.5, None, True, "x"]}) is None
