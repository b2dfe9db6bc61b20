"""Stripe's bracket-notation form encoding, and its inverse used by the simulator."""

from __future__ import annotations

from urllib.parse import parse_qsl

import pytest

from edge.providers.stripe.form import decode, encode


def test_nested_params_encode_in_bracket_notation() -> None:
    text = encode({"mode": "payment", "line_items": [{"quantity": 2}], "metadata": {"a b": "x&y"},
                   "skip": None, "flag": True})  # fmt: skip
    assert parse_qsl(text) == [
        ("mode", "payment"), ("line_items[0][quantity]", "2"), ("metadata[a b]", "x&y"),
        ("flag", "true"),
    ]  # fmt: skip


def test_decode_inverts_encode() -> None:
    params = {
        "line_items": [{"price_data": {"currency": "eur", "unit_amount": "1999"}, "quantity": "1"}],
        "metadata": {"txId": "tx_1", "customerRef": "u=1&2"},
        "payment_intent_data": {"metadata": {"txId": "tx_1"}},
    }
    assert decode(parse_qsl(encode(params))) == params


def test_decode_reads_repeated_empty_brackets_as_a_list() -> None:
    pairs = [("url", "http://x"), ("enabled_events[]", "a"), ("enabled_events[]", "b")]
    assert decode(pairs) == {"url": "http://x", "enabled_events": ["a", "b"]}


@pytest.mark.parametrize("key", ["[a]", "a[b", "a[b]c", "a[][b]"])
def test_decode_refuses_unreadable_names(key: str) -> None:
    with pytest.raises(ValueError):
        decode([(key, "1")])


def test_decode_refuses_conflicting_names() -> None:
    with pytest.raises(ValueError):
        decode([("a", "1"), ("a[b]", "2")])
