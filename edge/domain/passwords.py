"""Account passwords (CONTRACT 4.7): at least 10 characters, stored only as a memory-hard hash
with a per-account salt. Pure: the salt is passed in; no I/O.

scrypt (RFC 7914, in the standard library) with N=2^14, r=8, p=1: 16 MiB and tens of
milliseconds a try, so a stolen store cannot be guessed through quickly. The parameters travel
in the stored string, so stronger ones later still verify the old hashes.
"""

from __future__ import annotations

import base64
import hashlib
import hmac

MIN_LENGTH = 10
MAX_LENGTH = 1024  # a longer one is a denial of service through the hash, not a password
SALT_BYTES = 16
_N, _R, _P, _LENGTH = 2**14, 8, 1, 32
_MAXMEM = 64 * 2**20


def problem(password: object) -> str | None:
    """Why ``password`` cannot be one, or None."""
    if not isinstance(password, str):
        return "password must be a string"
    if len(password) < MIN_LENGTH:
        return f"password must have at least {MIN_LENGTH} characters"
    if len(password) > MAX_LENGTH:
        return f"password must have at most {MAX_LENGTH} characters"
    return None


def hash_password(password: str, salt: bytes) -> str:
    """``scrypt$N$r$p$<salt>$<hash>`` (base64, no padding)."""
    digest = _scrypt(password, salt, _N, _R, _P)
    return f"scrypt${_N}${_R}${_P}${_b64(salt)}${_b64(digest)}"


def verify(password: str, stored: str) -> bool:
    """Whether ``password`` is the one ``stored`` was made from (constant-time compare); False
    for a stored string that is not a hash this module makes."""
    try:
        scheme, n, r, p, salt, digest = stored.split("$")
        if scheme != "scrypt":
            return False
        expected = _unb64(digest)
        got = _scrypt(password, _unb64(salt), int(n), int(r), int(p))
    except ValueError:
        return False
    return hmac.compare_digest(got, expected)


def credentials_stamp(password_hash: str) -> str:
    """What a session, a reset link or a login waiting for its second factor keeps of the
    password it was made under: it holds only while the account's password is that one, so
    a new password ends them all, even one made on another node while the password changed.
    Its own salt makes every stored hash distinct, so a reset to the same password ends them
    too; 64 bits of SHA-256 tell nothing of the hash."""
    return hashlib.sha256(password_hash.encode("utf-8")).hexdigest()[:16]


def _scrypt(password: str, salt: bytes, n: int, r: int, p: int) -> bytes:
    return hashlib.scrypt(
        password.encode("utf-8"), salt=salt, n=n, r=r, p=p, maxmem=_MAXMEM, dklen=_LENGTH
    )


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
