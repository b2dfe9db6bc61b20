"""Stripe's webhook signature scheme, verifying and signing. Pure: no I/O, no clock.

Header: ``Stripe-Signature: t=<unix seconds>,v1=<hex>[,v1=<hex>...]``. Each ``v1`` is
HMAC-SHA256, keyed with the whole ``whsec_...`` string (UTF-8, not base64-decoded), over
``b"<t>." + raw_body``. Other schemes (``v0``) are ignored.

Order of checks, as in stripe-python's ``_webhook.py``: the header is parsed, then the signature
is checked, then the timestamp. So a stale but genuine delivery is reported as
``timestamp_out_of_tolerance`` and a forgery as ``no_matching_signature``, whatever its age.
Unlike stripe-python, timestamps more than the window in the future are refused too
(CONTRACT 4.3). The window is the adapter's (``Provider.signature_window_s``), passed in.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Sequence

from edge.providers.base import SignatureInvalid
from edge.providers.freshness import check_timestamp

# Stripe's window (it signs every retry afresh); the adapter declares it as its
# ``signature_window_s``, and ``verify`` uses it unless told otherwise.
WINDOW_S = 300
SCHEME = "v1"

_TIMESTAMP = re.compile(r"[0-9]{1,12}")


def compute_signature(secret: str, body: bytes, timestamp: int) -> str:
    """The hex ``v1`` value for ``body`` signed at ``timestamp``."""
    signed = f"{timestamp}.".encode() + body
    return hmac.new(secret.encode("utf-8"), signed, hashlib.sha256).hexdigest()


def sign_header(secret: str, body: bytes, timestamp: int) -> str:
    """A ``Stripe-Signature`` header value as Stripe sends it: ``t=<ts>,v1=<hex>``."""
    return f"t={timestamp},{SCHEME}={compute_signature(secret, body, timestamp)}"


def parse_header(header: str | None) -> tuple[int, tuple[str, ...]]:
    """The timestamp and the ``v1`` signatures of a header.

    Raises ``SignatureInvalid("missing_header")`` for None or blank, and
    ``SignatureInvalid("malformed_header")`` when an item is not ``key=value``, ``t`` is absent,
    repeated or not a plain integer, or no ``v1`` entry is present.
    """
    if header is None or not header.strip():
        raise SignatureInvalid("missing_header", "The Stripe-Signature header is missing.")
    timestamps: list[str] = []
    signatures: list[str] = []
    for item in header.split(","):
        item = item.strip()
        if not item:
            continue  # a trailing comma is sloppy, not dangerous
        key, sep, value = item.partition("=")
        if not sep:
            raise _malformed("every item must be key=value")
        if key == "t":
            timestamps.append(value)
        elif key == SCHEME:
            signatures.append(value)
    if len(timestamps) != 1 or not _TIMESTAMP.fullmatch(timestamps[0]):
        raise _malformed("it needs exactly one integer t=")
    if not signatures:
        raise _malformed(f"it has no {SCHEME}= signature")
    return int(timestamps[0]), tuple(signatures)


def signature_matches(
    timestamp: int, signatures: Sequence[str], body: bytes, secrets: Sequence[str]
) -> bool:
    """True iff any of ``signatures`` is the signature of ``body`` under any of ``secrets``.

    Every comparison is constant-time; several secrets exist during a rotation, several
    signatures when Stripe itself rotates an endpoint secret.
    """
    matched = False
    for secret in secrets:
        expected = compute_signature(secret, body, timestamp).encode()
        for candidate in signatures:
            # No early exit: the time taken does not say which pair matched.
            matched |= hmac.compare_digest(expected, candidate.encode("utf-8", "replace"))
    return matched


def verify(
    header: str | None,
    body: bytes,
    secrets: Sequence[str],
    now_s: float,
    tolerance_s: int = WINDOW_S,
) -> None:
    """Return if ``header`` is a fresh signature of ``body`` by one of ``secrets``; else raise
    ``SignatureInvalid`` with reason missing_header, malformed_header,
    timestamp_out_of_tolerance or no_matching_signature."""
    timestamp, signatures = parse_header(header)
    if not signature_matches(timestamp, signatures, body, secrets):
        raise no_matching_signature()
    check_timestamp(timestamp, now_s, tolerance_s)


def no_matching_signature() -> SignatureInvalid:
    return SignatureInvalid(
        "no_matching_signature", "No signature matches the body and the webhook secret."
    )


def _malformed(why: str) -> SignatureInvalid:
    return SignatureInvalid("malformed_header", f"The Stripe-Signature header is malformed: {why}.")
