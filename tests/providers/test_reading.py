"""Reading a provider's body: the event's numbers as the provider wrote them."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from edge.providers.base import MalformedPayload
from edge.providers.reading import json_object

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.text()
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@given(st.dictionaries(st.text(), JSON_VALUES, max_size=6))
def test_a_body_reads_as_the_standard_library_reads_it(event):
    """Integers of any size stay exact integers (a fast parser turns those past 64 bits into
    floats, which readers take for absent values)."""
    body = json.dumps(event).encode()
    assert json_object(body) == json.loads(body)


def test_an_amount_past_64_bits_is_an_exact_integer():
    assert json_object(b'{"amount": 1180591620717411303424}') == {"amount": 2**70}
    assert json_object(b'{"amount": -9223372036854775809}') == {"amount": -(2**63) - 1}


@pytest.mark.parametrize("body", [b"", b"{", b"[1]", b'"x"', b"\xff{}", b"[" * 100_000])
def test_what_is_no_json_object_is_malformed(body):
    with pytest.raises(MalformedPayload):
        json_object(body)


def test_what_json_does_not_allow_is_malformed_even_where_python_reads_it():
    for body in (b'{"a": NaN}', b'{"a": Infinity}', b'{"a": "\\ud800"}'):
        with pytest.raises(MalformedPayload):
            json_object(body)
