"""One-time recovery codes (edge.domain.recovery_codes)."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st

from edge.domain import recovery_codes


def test_ten_codes_of_fifty_bits_each_shown_in_two_groups():
    codes = recovery_codes.new_codes(random.Random(7).getrandbits)
    assert len(codes) == 10 == len(set(codes))
    for code in codes:
        assert len(code) == 11 and code[5] == "-"
        assert recovery_codes.normalized(code) == code.replace("-", "")


@given(st.integers(min_value=0, max_value=2**50 - 1))
def test_a_code_is_read_back_however_it_is_typed(bits):
    (code, *_) = recovery_codes.new_codes(lambda _n: bits)
    kept = recovery_codes.digest(recovery_codes.normalized(code) or "")
    for typed in (
        code,
        code.upper(),
        code.replace("-", " "),
        f"  {code}  ",
        code.replace("1", "l"),
    ):
        assert recovery_codes.digest(recovery_codes.normalized(typed) or "") == kept, typed


@given(st.text(max_size=50))
def test_a_normalized_code_is_ten_crockford_characters_or_none(text):
    found = recovery_codes.normalized(text)
    assert found is None or (
        len(found) == 10 and all(c in "0123456789abcdefghjkmnpqrstvwxyz" for c in found)
    )
