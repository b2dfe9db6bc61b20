"""Paddle's webhook signature scheme, verifying and signing. Pure: no I/O, no clock.

Header: ``Paddle-Signature: ts=<unix seconds>;h1=<hex>[;h1=<hex>...]``. Each ``h1`` is
HMAC-SHA256, keyed with the notification destination's secret as UTF-8, over
``b"<ts>:" + raw_body`` (paddle-python-sdk ``Notifications/PaddleSignature.py``). Paddle sends
several ``h1`` while a destination's secret is being rotated: any one may match.

Order of checks, as in the Stripe module: the header is parsed, then the signature is checked,
then the timestamp, so a stale but genuine delivery is reported as
``timestamp_out_of_tolerance`` and a forgery as ``no_matching_signature``. Paddle signs every
attempt afresh; its SDK allows 5 seconds, the node the adapter's window (CONTRACT 4.3: 300 s),
in both directions.

Unlike the SDK, which raises on a key it does not know, unknown keys are skipped: a scheme
Paddle adds later must not turn every delivery away while ``h1`` still verifies.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Sequence

from edge.providers.base import SignatureInvalid
from edge.providers.freshness import check_timestamp

WINDOW_S = 300
SCHEME = "h1"

_TIMESTAMP = re.compile(r"[0-9]{1,12}")


def compute_signature(secret: str, body: bytes, timestamp: int) -> str:
    """The hex ``h1`` value for ``body`` signed at ``timestamp``."""
    signed = f"{timestamp}:".encode() + body
    return hmac.new(secret.encode("utf-8"), signed, hashlib.sha256).hexdigest()


def sign_header(secrets: str | Sequence[str], body: bytes, timestamp: int) -> str:
    """A ``Paddle-Signature`` value as Paddle sends it: ``ts=<ts>;h1=<hex>``, with one ``h1``
    per secret (several during a rotation)."""
    keys = [secrets] if isinstance(secrets, str) else list(secrets)
    return ";".join(
        [f"ts={timestamp}", *(f"{SCHEME}={compute_signature(k, body, timestamp)}" for k in keys)]
    )


def parse_header(header: str | None) -> tuple[int, tuple[str, ...]]:
    """The timestamp and the ``h1`` signatures of a header.

    ``SignatureInvalid("missing_header")`` for None or blank; ``malformed_header`` when an item
    is not ``key=value``, ``ts`` is absent, repeated or not a plain integer, or no ``h1`` is
    present.
    """
    if header is None or not header.strip():
        raise SignatureInvalid("missing_header", "The Paddle-Signature header is missing.")
    timestamps: list[str] = []
    signatures: list[str] = []
    for item in header.split(";"):
        item = item.strip()
        if not item:
            continue
        key, sep, value = item.partition("=")
        if not sep:
            raise _malformed("every item must be key=value")
        if key == "ts":
            timestamps.append(value)
        elif key == SCHEME:
            signatures.append(value)
    if len(timestamps) != 1 or not _TIMESTAMP.fullmatch(timestamps[0]):
        raise _malformed("it needs exactly one integer ts=")
    if not signatures:
        raise _malformed(f"it has no {SCHEME}= signature")
    return int(timestamps[0]), tuple(signatures)


def signature_matches(
    timestamp: int, signatures: Sequence[str], body: bytes, secrets: Sequence[str]
) -> bool:
    """True iff any of ``signatures`` signs ``body`` at ``timestamp`` under any of
    ``secrets``. Every pair is compared, in constant time, whatever matched first."""
    matched = False
    for secret in secrets:
        expected = compute_signature(secret, body, timestamp).encode()
        for candidate in signatures:
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
    ``SignatureInvalid`` (missing_header, malformed_header, timestamp_out_of_tolerance,
    no_matching_signature)."""
    timestamp, signatures = parse_header(header)
    if not signature_matches(timestamp, signatures, body, secrets):
        raise no_matching_signature()
    check_timestamp(timestamp, now_s, tolerance_s)


def no_matching_signature() -> SignatureInvalid:
    return SignatureInvalid(
        "no_matching_signature", "No signature matches the body and the webhook secret."
    )


def _malformed(why: str) -> SignatureInvalid:
    return SignatureInvalid("malformed_header", f"The Paddle-Signature header is malformed: {why}.")
