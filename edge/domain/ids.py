"""Identifier formats of CONTRACT §1: generation and validation.

Every ``is_*`` predicate accepts any object and returns False for non-strings,
so it can be applied directly to untrusted JSON values and path segments.
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import time
from collections.abc import Callable

from .errors import InvalidInput
from .modes import MODES

CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_CROCKFORD_INDEX = {c: i for i, c in enumerate(CROCKFORD)}
_DIGIT_PAIRS = [high + low for high in CROCKFORD for low in CROCKFORD]  # ten bits each
_BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

_TIME_BITS = 48
_RANDOM_BITS = 80
_ULID_MAX = (1 << (_TIME_BITS + _RANDOM_BITS)) - 1

# First char 0-7: 26 base32 chars hold 130 bits, a ULID only 128.
_ULID = r"[0-7][0-9A-HJKMNP-TV-Z]{25}"
_ULID_RE = re.compile(_ULID)
_TX_RE = re.compile("tx_" + _ULID)
_SUB_RE = re.compile("sub_" + _ULID)
_EVT_RE = re.compile("evt_" + _ULID)
_KEY_RE = re.compile("key_" + _ULID)
_ENDPOINT_RE = re.compile("we_" + _ULID)
_ACCOUNT_RE = re.compile("acc_" + _ULID)
_PROJECT_RE = re.compile(r"prj_[0-9a-hjkmnp-tv-z]{16}")
_PRODUCT_RE = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
_API_KEY_RE = re.compile(r"cmk_(live|test)_[0-9A-Za-z]{32}")


def _encode(value: int, length: int) -> str:
    """The last ``length`` Crockford digits of ``value`` (non-negative), two at a time."""
    pairs = []
    for _ in range(length // 2):
        pairs.append(_DIGIT_PAIRS[value & 1023])
        value >>= 10
    if length % 2:
        pairs.append(CROCKFORD[value & 31])
    return "".join(reversed(pairs))


def _decode(text: str) -> int:
    value = 0
    for c in text:
        value = value * 32 + _CROCKFORD_INDEX[c]
    return value


def wall_clock_ms() -> int:
    """The machine's wall clock, in milliseconds since the epoch."""
    return time.time_ns() // 1_000_000


class _Entropy:
    """The system's random bits read a page at a time, not a system call an id; a forked child
    starts from fresh bits, never its parent's."""

    PAGE = 4096

    def __init__(self) -> None:
        self._page = b""
        self._at = 0
        os.register_at_fork(after_in_child=self._forget)

    def _forget(self) -> None:
        self._page, self._at = b"", 0

    def randbits(self, k: int) -> int:
        size = (k + 7) // 8
        if self._at + size > len(self._page):
            self._page, self._at = os.urandom(self.PAGE), 0
        chunk = self._page[self._at : self._at + size]
        self._at += size
        return int.from_bytes(chunk, "big") >> (size * 8 - k)


_entropy = _Entropy()


class UlidFactory:
    """Generates ULIDs that are strictly increasing for this factory.

    Guarantee: each returned id sorts (as a string and as a number) after every
    id this factory returned before, even when the clock stalls or goes
    backwards. Event ids are the event feed's cursor, so an id that sorted
    before an earlier one would make a reader skip an event forever.

    Within one millisecond (or when the clock is behind the last id) the
    previous value is incremented by one, the carry flowing from the random
    part into the time part; the time part therefore never decreases.
    """

    def __init__(
        self,
        clock_ms: Callable[[], int] | None = None,
        randbits: Callable[[int], int] | None = None,
    ):
        self._clock_ms = clock_ms or wall_clock_ms
        self._randbits = randbits or _entropy.randbits
        self._last = -1

    def follow(self, clock_ms: Callable[[], int] | None) -> None:
        """Make ids by ``clock_ms`` from now on (None: the wall clock): a node in cluster mode
        gives its store's time, so the ids of a project's events sort in the order they were
        made whichever node made them (the event feed's cursor). Ids already made still sort
        first."""
        self._clock_ms = clock_ms or wall_clock_ms

    def __call__(self) -> str:
        now = self._clock_ms()
        if not 0 <= now < (1 << _TIME_BITS):
            raise ValueError(f"clock value out of ULID range: {now}")
        if now > self._last >> _RANDOM_BITS:
            value = (now << _RANDOM_BITS) | self._randbits(_RANDOM_BITS)
        else:
            value = self._last + 1
            if value > _ULID_MAX:
                raise OverflowError("ULID space exhausted")
        self._last = value
        return _encode(value, 26)


def is_ulid(s: object) -> bool:
    """True for a 26-char upper-case Crockford ULID."""
    return isinstance(s, str) and _ULID_RE.fullmatch(s) is not None


def ulid_time_ms(ulid: str) -> int:
    """The millisecond timestamp of a ULID (accepts a bare ULID only)."""
    if not is_ulid(ulid):
        raise InvalidInput("not a ULID", code="invalid_id")
    return _decode(ulid) >> _RANDOM_BITS


def ulid_floor(ms: int) -> str:
    """The smallest ULID of millisecond ``ms``: every ULID made at ``ms`` or later sorts at or
    after it, every one made before sorts before it (a cutoff for keys ending in a ULID)."""
    if not 0 <= ms < (1 << _TIME_BITS):
        raise ValueError(f"time out of ULID range: {ms}")
    return _encode(ms << _RANDOM_BITS, 26)


new_ulid = UlidFactory()


def new_tx_id() -> str:
    return "tx_" + new_ulid()


def new_sub_id() -> str:
    return "sub_" + new_ulid()


def new_evt_id() -> str:
    return "evt_" + new_ulid()


def new_key_id() -> str:
    return "key_" + new_ulid()


def new_endpoint_id() -> str:
    return "we_" + new_ulid()


def new_account_id() -> str:
    return "acc_" + new_ulid()


def new_project_id(randbits: Callable[[int], int] = secrets.randbits) -> str:
    """``prj_`` + 16 lower-case Crockford chars carrying 80 random bits."""
    return "prj_" + _encode(randbits(80), 16).lower()


def _matches(pattern: re.Pattern[str], s: object) -> bool:
    # fullmatch, not match with "$": "$" would accept a trailing newline.
    return isinstance(s, str) and pattern.fullmatch(s) is not None


def is_project_id(s: object) -> bool:
    return _matches(_PROJECT_RE, s)


def is_tx_id(s: object) -> bool:
    return _matches(_TX_RE, s)


def is_sub_id(s: object) -> bool:
    return _matches(_SUB_RE, s)


def is_evt_id(s: object) -> bool:
    return _matches(_EVT_RE, s)


def is_key_id(s: object) -> bool:
    return _matches(_KEY_RE, s)


def is_endpoint_id(s: object) -> bool:
    return _matches(_ENDPOINT_RE, s)


def is_account_id(s: object) -> bool:
    return _matches(_ACCOUNT_RE, s)


def is_product_id(s: object) -> bool:
    return _matches(_PRODUCT_RE, s)


# --- manual reference codes -------------------------------------------------

_REF_PREFIX = "CM"
_REF_DATA_LEN = 8
# Crockford decoding: letters a person may write for a digit.
_REF_ALIASES = str.maketrans({"O": "0", "I": "1", "L": "1"})
_REF_STRIP = re.compile(r"[\s\-]+")


def _luhn_addend(index: int, double: bool) -> int:
    if not double:
        return index
    doubled = index * 2
    # Sum of the two base-32 "digits" of doubled (it is below 64).
    return doubled // 32 + doubled % 32


def _ref_check_char(data: str) -> str:
    """Luhn mod 32 check char over ``data``.

    Catches every single-character substitution and every transposition of
    adjacent distinct characters except ``0`` <-> ``Z`` (doubling fixes both 0
    and 31, a property of Luhn mod N for every N).
    """
    total = 0
    double = True  # the rightmost data char is doubled, the check char is not
    for c in reversed(data):
        total += _luhn_addend(_CROCKFORD_INDEX[c], double)
        double = not double
    return CROCKFORD[(32 - total % 32) % 32]


def new_reference_code(randbits: Callable[[int], int] = secrets.randbits) -> str:
    """A fresh ``CM-XXXX-XXXX-C`` code: 40 random bits and a Luhn mod 32 check char."""
    data = _encode(randbits(_REF_DATA_LEN * 5), _REF_DATA_LEN)
    return f"{_REF_PREFIX}-{data[:4]}-{data[4:]}-{_ref_check_char(data)}"


def normalize_reference_code(text: object) -> str | None:
    """The canonical ``CM-XXXX-XXXX-C`` form of what a person wrote, or None.

    Tolerates any case, missing ``CM-`` prefix, hyphens and whitespace
    anywhere, and the Crockford aliases O->0, I/L->1. Returns None unless the
    check char matches, so a mistyped code never maps to another transaction
    by accident (beyond the 1 in 32 a random string would have).
    """
    if not isinstance(text, str):
        return None
    compact = _REF_STRIP.sub("", text).upper()
    # "C" and "M" are also data chars, so the prefix is recognised by length.
    if len(compact) == _REF_DATA_LEN + 3 and compact.startswith(_REF_PREFIX):
        compact = compact[len(_REF_PREFIX) :]
    if len(compact) != _REF_DATA_LEN + 1:
        return None
    compact = compact.translate(_REF_ALIASES)
    if any(c not in _CROCKFORD_INDEX for c in compact):
        return None
    data, check = compact[:-1], compact[-1]
    if _ref_check_char(data) != check:
        return None
    return f"{_REF_PREFIX}-{data[:4]}-{data[4:]}-{check}"


# --- API keys ---------------------------------------------------------------


def new_api_key(mode: str, randbelow: Callable[[int], int] = secrets.randbelow) -> str:
    """``cmk_<mode>_`` + 32 base62 chars (about 190 random bits)."""
    if mode not in MODES:
        raise ValueError(f"API key mode must be 'live' or 'test', not {mode!r}")
    return f"cmk_{mode}_" + "".join(_BASE62[randbelow(62)] for _ in range(32))


def api_key_mode(key: object) -> str | None:
    """ "live" or "test" for a well-formed key, else None (says nothing about validity)."""
    if not isinstance(key, str):
        return None
    m = _API_KEY_RE.fullmatch(key)
    return m.group(1) if m else None


def hash_api_key(key: str) -> bytes:
    """SHA-256 of the UTF-8 key: what is stored. Keys carry enough entropy
    that an unsalted fast hash cannot be brute-forced."""
    return hashlib.sha256(key.encode("utf-8")).digest()
