"""BTCPay Server's webhook signature, verifying and signing. Pure: no I/O, no clock.

Header: ``BTCPay-Sig: sha256=<lower-case hex>``, HMAC-SHA256 keyed with the webhook secret's
UTF-8 bytes over the exact body bytes (``WebhookSender.cs``). BTCPay sends indented JSON, so only
the raw bytes verify: a re-serialized body does not. There is no timestamp in the header and
retries resend the first body, so no window applies (CONTRACT 4.3); the delivery id
deduplicates a replay.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from edge.providers.base import SignatureInvalid
from edge.providers.verifying import Signed, WebhookScheme

HEADER = "btcpay-sig"
PREFIX = "sha256="
_HEX = re.compile(r"[0-9a-fA-F]{64}")


def compute(secret: str, body: bytes) -> str:
    return WEBHOOK.compute(secret, Signed(()), body)


def sign_header(secret: str, body: bytes) -> str:
    """The ``BTCPay-Sig`` value BTCPay sends for ``body``."""
    return PREFIX + compute(secret, body)


def parse_header(header: str | None) -> str:
    """The hex digest of a header; ``missing_header`` or ``malformed_header`` otherwise."""
    if header is None or not header.strip():
        raise SignatureInvalid("missing_header", "The BTCPay-Sig header is missing.")
    value = header.strip()
    if not value.startswith(PREFIX) or not _HEX.fullmatch(value[len(PREFIX) :]):
        raise SignatureInvalid(
            "malformed_header", "The BTCPay-Sig header must be sha256=<64 hex digits>."
        )
    return value[len(PREFIX) :].lower()


def read(headers: Mapping[str, str]) -> Signed:
    return Signed((parse_header(headers.get(HEADER)),))


# the exact body, keyed with the webhook's secret; no window: retries resend the first body
WEBHOOK = WebhookScheme("BTCPay-Sig", read, window_s=None)


def signature_matches(digest: str, body: bytes, secrets: Sequence[str]) -> bool:
    """True iff ``digest`` signs ``body`` under any of ``secrets`` (constant-time)."""
    return WEBHOOK.matches(Signed((digest,)), body, secrets)
