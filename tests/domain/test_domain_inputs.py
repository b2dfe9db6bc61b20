"""Bounds on callers' numbers and text: never an exception, whatever the input."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from edge.domain.inputs import MAX_DEPTH, bounded_int, bounded_json_int, first_flaw, is_text


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


def test_text_flaws():
    assert is_text("café ☕") and not is_text("\ud800")
    assert first_flaw({"a": ["ok", {"b": "\udfff"}]}) == "text with a lone surrogate"
    assert first_flaw({"\ud800": 1}) == "text with a lone surrogate"
    deep: object = "leaf"
    for _ in range(MAX_DEPTH + 1):
        deep = [deep]
    assert first_flaw(deep) == f"nesting deeper than {MAX_DEPTH}"
    assert first_flaw({"fine": [1, 2.5, None, True, "x"]}) is None
