"""Notifications to the merchant's server (CONTRACT 4.8): Standard Webhooks 1.0 signatures, the
retry schedule, and which events an endpoint takes. No I/O."""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
from collections.abc import Iterable, Sequence

SECRET_PREFIX = "whsec_"
SECRET_BYTES = 32  # the spec allows 24 to 64
_SECRET_RE = re.compile(r"whsec_[A-Za-z0-9+/]{32,88}={0,2}")

# Seconds to wait before each attempt after a failure: Standard Webhooks' schedule (the first
# attempt is immediate). After the last one fails the notification is marked failed.
RETRY_S: tuple[int, ...] = (5, 300, 1800, 7200, 18000, 36000, 36000)
ATTEMPT_TIMEOUT_S = 15.0
DISABLE_AFTER_MS = 5 * 24 * 3600 * 1000  # an endpoint failing this long is disabled
ROTATION_OVERLAP_MS = 24 * 3600 * 1000  # a rotated secret signs beside the new one this long

MAX_ENDPOINTS = 20  # per project
MAX_TYPES = 50


def new_secret() -> str:
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(SECRET_BYTES)).decode("ascii")


def is_secret(value: object) -> bool:
    if not isinstance(value, str) or _SECRET_RE.fullmatch(value) is None:
        return False
    try:
        key = base64.b64decode(value[len(SECRET_PREFIX) :], validate=True)
    except ValueError:
        return False
    return 24 <= len(key) <= 64


def signature(secret: str, msg_id: str, timestamp_s: int, body: bytes) -> str:
    """``v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">`` under one ``whsec_`` secret."""
    key = base64.b64decode(secret[len(SECRET_PREFIX) :])
    signed = msg_id.encode() + b"." + str(timestamp_s).encode() + b"." + body
    return "v1," + base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()


def headers(secrets_: Sequence[str], msg_id: str, timestamp_s: int, body: bytes) -> dict[str, str]:
    """The three Standard Webhooks headers; several secrets (a rotation) sign side by side."""
    return {
        "webhook-id": msg_id,
        "webhook-timestamp": str(timestamp_s),
        "webhook-signature": " ".join(signature(s, msg_id, timestamp_s, body) for s in secrets_),
    }


def retry_delay_s(failed_attempts: int) -> int | None:
    """Seconds until the next attempt after ``failed_attempts`` failures; None: give up."""
    if failed_attempts < 1 or failed_attempts > len(RETRY_S):
        return None
    return RETRY_S[failed_attempts - 1]


def wants(types: Iterable[str] | None, event_type: str) -> bool:
    """Does an endpoint with this type filter take ``event_type``? No filter: every type."""
    return types is None or event_type in types


def is_success(status: int) -> bool:
    return 200 <= status < 300


def disables(status: int) -> bool:
    """``410 Gone``: the merchant took the endpoint away; stop at once."""
    return status == 410
