"""Time-based one-time passwords for two-factor login (RFC 6238, through pyotp): 6 digits, a
new code every 30 seconds, from a 160-bit secret the account holder's authenticator app keeps.

The window rule: a code is taken for the current step and the one either side (a clock up to
30 s off, a code typed as it turned over), and only for a step later than the last one taken
from the account, so a code seen over someone's shoulder cannot be used again. Pure: the time
and the last step taken are passed in.
"""

from __future__ import annotations

import base64
import hmac
import re

import pyotp

STEP_S = 30
DIGITS = 6
WINDOW = 1  # steps taken either side of the current one
SECRET_BYTES = 20  # 160 bits, as RFC 4226 recommends
_CODE = re.compile(r"[0-9]{6}")


def secret_from(raw: bytes) -> str:
    """A base32 secret, as authenticator apps take it, from ``SECRET_BYTES`` random bytes."""
    return base64.b32encode(raw).decode("ascii").rstrip("=")


def provisioning_uri(secret: str, account: str, issuer: str) -> str:
    """The ``otpauth://totp/...`` address an app reads (as a QR code or typed)."""
    return pyotp.TOTP(secret, digits=DIGITS, interval=STEP_S).provisioning_uri(
        name=account, issuer_name=issuer
    )


def step_at(now_s: float) -> int:
    return int(now_s // STEP_S)


def code_at(secret: str, step: int) -> str:
    return pyotp.TOTP(secret, digits=DIGITS, interval=STEP_S).generate_otp(step)


def normalized(code: object) -> str | None:
    """The 6 digits of what a person typed (spaces allowed), or None."""
    if not isinstance(code, str):
        return None
    digits = "".join(code.split())
    return digits if _CODE.fullmatch(digits) else None


def accepted_step(secret: str, code: object, now_s: float, last_step: int) -> int | None:
    """The step ``code`` belongs to when it is taken now, else None. Every step of the window
    is compared, in constant time, whichever matches."""
    typed = normalized(code)
    if typed is None:
        return None
    now = step_at(now_s)
    found = None
    for step in range(max(0, now - WINDOW), now + WINDOW + 1):
        if hmac.compare_digest(code_at(secret, step), typed) and step > last_step:
            found = step if found is None else found
    return found
