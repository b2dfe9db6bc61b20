"""One-time recovery codes for an account with two-factor login: for the day its authenticator
app is lost. Ten codes of 10 Crockford base32 characters (50 random bits each), shown once when
two-factor login is turned on; the account keeps only their SHA-256 (a code has too many bits
to guess, so a salt and a slow hash would add nothing), and each is spent by its first use.
Pure: the random bits are passed in.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

COUNT = 10
_CHARS = "0123456789abcdefghjkmnpqrstvwxyz"  # Crockford: no i, l, o, u
_ALIASES = str.maketrans({"i": "1", "l": "1", "o": "0"})
_LENGTH = 10
_BITS = 5 * _LENGTH


def new_codes(randbits: Callable[[int], int]) -> list[str]:
    """``COUNT`` codes, each shown as ``xxxxx-xxxxx``."""
    return [_shown(_encode(randbits(_BITS))) for _ in range(COUNT)]


def normalized(text: object) -> str | None:
    """A typed code as it is kept (spaces, dashes and case ignored; i, l, o read as 1, 1, 0),
    or None when it cannot be one."""
    if not isinstance(text, str) or len(text) > 40:
        return None
    bare = "".join(text.lower().replace("-", "").split()).translate(_ALIASES)
    if len(bare) != _LENGTH or any(ch not in _CHARS for ch in bare):
        return None
    return bare


def digest(code: str) -> bytes:
    """What the account keeps of ``code`` (``normalized`` first)."""
    return hashlib.sha256(code.encode("ascii")).digest()


def _encode(value: int) -> str:
    return "".join(_CHARS[(value >> (5 * i)) & 31] for i in reversed(range(_LENGTH)))


def _shown(code: str) -> str:
    return f"{code[:5]}-{code[5:]}"
