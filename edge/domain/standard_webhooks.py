"""Standard Webhooks 1.0 signatures (CONTRACT 4.8; the spec at standardwebhooks.com):
``webhook-signature: v1,<base64 HMAC-SHA256 over "{id}.{timestamp}.{body}">`` with the secret
``whsec_`` + base64 of its bytes. Several signatures are separated by spaces (a rotated
secret signs with both while the old one is still valid)."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
from collections.abc import Iterable

PREFIX = "whsec_"
SECRET_BYTES = 32  # the spec allows 24 to 64


def new_secret() -> str:
    return PREFIX + base64.b64encode(secrets.token_bytes(SECRET_BYTES)).decode()


def secret_bytes(secret: str) -> bytes:
    """The key of a ``whsec_`` secret; ValueError when it is not one."""
    if not secret.startswith(PREFIX):
        raise ValueError("a Standard Webhooks secret starts with whsec_")
    try:
        key = base64.b64decode(secret[len(PREFIX) :], validate=True)
    except binascii.Error:
        raise ValueError("a Standard Webhooks secret is base64 after whsec_") from None
    if not key:
        raise ValueError("a Standard Webhooks secret is not empty")
    return key


def signature(secret: str, message_id: str, timestamp: int, body: bytes) -> str:
    """One ``v1,<base64>`` signature of ``body``."""
    signed = f"{message_id}.{timestamp}.".encode() + body
    digest = hmac.new(secret_bytes(secret), signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()


def headers(
    secrets_in_use: Iterable[str], message_id: str, timestamp: int, body: bytes
) -> dict[str, str]:
    """The three headers of a notification, signed with every secret in use."""
    return {
        "webhook-id": message_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": " ".join(
            signature(secret, message_id, timestamp, body) for secret in secrets_in_use
        ),
    }
