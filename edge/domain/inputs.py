"""Bounds on what callers send, checked before anything is parsed or stored (CONTRACT 8).

Numbers have at most ``MAX_DIGITS`` digits (Python refuses to parse an integer of over 4,300
digits, and nothing the node counts needs more than 18); text is valid Unicode (a lone surrogate
cannot be encoded, stored or answered); nesting stops at ``MAX_DEPTH``.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

MAX_DIGITS = 18
MAX_DEPTH = 64


def bounded_int(raw: str, low: int, high: int) -> int | None:
    """``raw`` as an integer in ``low..high``: ASCII digits only, at most ``MAX_DIGITS``; else
    None."""
    if not (0 < len(raw) <= MAX_DIGITS and raw.isascii() and raw.isdigit()):
        return None
    value = int(raw)
    return value if low <= value <= high else None


def is_text(value: str) -> bool:
    """Valid Unicode: no lone surrogate."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def first_flaw(value: Any, depth: int = 0) -> str | None:
    """What makes a parsed JSON value unfit to keep (a lone surrogate in a key or a string,
    nesting deeper than ``MAX_DEPTH``), or None."""
    if isinstance(value, str):
        return None if is_text(value) else "text with a lone surrogate"
    if depth >= MAX_DEPTH and isinstance(value, dict | list):
        return f"nesting deeper than {MAX_DEPTH}"
    if isinstance(value, dict):
        for key, item in value.items():
            flaw = first_flaw(key, depth) or first_flaw(item, depth + 1)
            if flaw:
                return flaw
    elif isinstance(value, list):
        for item in value:
            flaw = first_flaw(item, depth + 1)
            if flaw:
                return flaw
    return None


# A decimal number's text is bounded by length, and its magnitude here: ``1e999999999`` is
# short, but turning it into an integer (``int(Decimal(...))``) builds a billion digits.
MAX_NUMBER_CHARS = 40
MIN_EXPONENT = -MAX_NUMBER_CHARS


def bounded_json_decimal(raw: str) -> Decimal:
    """A ``json.loads`` ``parse_float`` hook: a number with a fraction or an exponent, as a
    Decimal, of at most ``MAX_NUMBER_CHARS`` characters and ``MAX_DIGITS`` digits before
    its point, and no finer than ``10 ** MIN_EXPONENT``."""
    if len(raw) > MAX_NUMBER_CHARS:
        raise ValueError(f"a number of more than {MAX_NUMBER_CHARS} characters")
    try:
        value = Decimal(raw)
    except ArithmeticError:  # an exponent past what Decimal holds: json's hooks raise ValueError
        raise ValueError("a number out of range") from None
    if not MIN_EXPONENT <= value.adjusted() < MAX_DIGITS:
        raise ValueError(f"a number out of range (at most {MAX_DIGITS} digits before its point)")
    return value


def bounded_json_int(raw: str) -> int:
    """A ``json.loads`` ``parse_int`` hook: refuses an integer of more than ``MAX_DIGITS``."""
    if len(raw.lstrip("-")) > MAX_DIGITS:
        raise ValueError(f"a number of more than {MAX_DIGITS} digits")
    return int(raw)
