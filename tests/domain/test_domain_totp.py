"""The TOTP window rule (edge.domain.totp): a code is taken in its own 30 s step and the one
either side, never outside, and only for a step later than the last one taken."""

from __future__ import annotations

import pyotp
from hypothesis import given
from hypothesis import strategies as st

from edge.domain import totp

SECRET = totp.secret_from(bytes(range(20)))
TIMES = st.integers(min_value=0, max_value=2**34)


def test_codes_are_rfc_6238_as_pyotp_makes_them():
    assert len(SECRET) == 32
    assert totp.code_at(SECRET, totp.step_at(1_700_000_000)) == pyotp.TOTP(SECRET).at(1_700_000_000)
    uri = totp.provisioning_uri(SECRET, "m@example.com", "edge")
    assert uri.startswith("otpauth://totp/edge:m%40example.com?") and f"secret={SECRET}" in uri


@given(TIMES, st.integers(min_value=-3, max_value=3))
def test_a_code_is_taken_within_one_step_either_side_only(made_at, steps_later):
    code = pyotp.TOTP(SECRET).at(made_at)
    now = max(0, made_at + steps_later * totp.STEP_S)
    taken = totp.accepted_step(SECRET, code, now, last_step=-1)
    if abs(totp.step_at(now) - totp.step_at(made_at)) <= totp.WINDOW:
        assert taken == totp.step_at(made_at)
    else:
        # another step's code may match by chance (1 in a million); never this one's step
        assert taken != totp.step_at(made_at)


@given(TIMES)
def test_a_code_is_never_taken_twice(now):
    code = pyotp.TOTP(SECRET).at(now)
    step = totp.accepted_step(SECRET, code, now, last_step=-1)
    assert step is not None
    assert totp.accepted_step(SECRET, code, now, last_step=step) is None
    assert totp.accepted_step(SECRET, code, now + totp.STEP_S, last_step=step) is None


@given(st.text(max_size=12))
def test_anything_but_six_digits_is_no_code(text):
    digits = "".join(text.split())
    if not (len(digits) == 6 and digits.isascii() and digits.isdigit()):
        assert totp.normalized(text) is None
        assert totp.accepted_step(SECRET, text, 1_700_000_000, -1) is None


def test_spaces_in_a_typed_code_are_ignored():
    code = pyotp.TOTP(SECRET).at(1_700_000_000)
    assert totp.accepted_step(SECRET, f" {code[:3]} {code[3:]} ", 1_700_000_000, -1) is not None
