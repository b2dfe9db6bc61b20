"""Webhook verification, composed once from what each provider declares (CONTRACT 4.3).

A provider states its scheme as data (``WebhookScheme``): the header it signs in and how that
header reads (``read``), what is signed (``signs``), the HMAC's hash, where the keys come from
(``secrets``: credential fields, the current secret first, then any kept for a rotation) and its
timestamp policy (``window_s``). ``verify`` runs the same steps for every provider, in the order
stripe-python's ``_webhook.py`` and Paddle's SDK use: the header is read (``missing_header``,
``malformed_header``), then the mode whose key signed the body is found (``no_matching_signature``),
then the timestamp is checked (``timestamp_out_of_tolerance``), so a stale but genuine delivery is
reported as stale and a forgery as a forgery, whatever its age.

The defaults are what every HMAC provider here shares: SHA-256 keyed with the secret's UTF-8
bytes, several signatures in one header (a provider rotating its secret) and several secrets of
one mode (the node's own rotation), every pair compared in constant time, and the window of
CONTRACT 4.3 where the provider signs every attempt afresh. A provider whose key is not a shared
secret (PayPal's certificate) declares its own ``signer`` step in place of the HMAC one; the
steps around it are the same.
"""

from __future__ import annotations

import hmac
import math
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field

from edge.providers.base import Delivery, SignatureInvalid
from edge.providers.signing import signing_mode

# Seconds a signed timestamp may be off where the provider signs every attempt afresh
# (CONTRACT 4.3), both ways.
WINDOW_S = 300


@dataclass(slots=True)  # not frozen: made per request (docs/architecture.md)
class Signed:
    """What a delivery's signature header(s) say: the signatures, the timestamp they were made at
    (None where the provider signs none) and, for a scheme that signs more than the body, the
    header values that go into what is signed (PayPal's transmission id and time)."""

    signatures: tuple[str, ...]
    timestamp: int | None = None
    values: Mapping[str, str] = field(default_factory=dict)


def body_only(signed: Signed, body: bytes) -> bytes:
    """What a provider that signs the exact body bytes and nothing else signs (BTCPay)."""
    return body


Signer = Callable[["WebhookScheme", Signed, Delivery], Awaitable[str]]


@dataclass(frozen=True)
class WebhookScheme:
    header: str  # the signature header's name as the provider documents it: "Stripe-Signature"
    # the header's format: ``Signed``, or ``missing_header`` / ``malformed_header``
    read: Callable[[Mapping[str, str]], Signed]
    signs: Callable[[Signed, bytes], bytes] = body_only  # what is signed
    digest: str = "sha256"  # the HMAC's hash (hashlib's name)
    # the key source: a mode's credential fields tried, in order (a rotation keeps the old one)
    secrets: tuple[str, ...] = ("webhookSecret",)
    # None where retries resend the first signature (PayPal, BTCPay): the event id deduplicates
    # a replay instead
    window_s: int | None = WINDOW_S
    # a step of the provider's own that finds the signing mode, in place of the shared HMAC one
    # (PayPal: an RSA key from a certificate each mode allows)
    signer: Signer | None = None

    def compute(self, secret: str, signed: Signed, body: bytes) -> str:
        """The hex signature ``secret`` makes of what this scheme signs."""
        message = self.signs(signed, body)
        return hmac.digest(secret.encode("utf-8"), message, self.digest).hex()  # OpenSSL's one go

    def matches(self, signed: Signed, body: bytes, secrets: Sequence[str]) -> bool:
        """True iff any of the signatures signs ``body`` under any of ``secrets``."""
        matched = False
        for secret in secrets:
            expected = self.compute(secret, signed, body).encode()
            for candidate in signed.signatures:
                # no early exit: the time taken does not say which pair matched
                matched |= hmac.compare_digest(expected, candidate.encode("utf-8", "replace"))
        return matched

    async def verify(self, delivery: Delivery) -> str:
        """The mode ("test" or "live") whose key signed the delivery; ``SignatureInvalid``
        with its reason otherwise."""
        signed = self.read(delivery.headers)
        mode = await (self.signer or hmac_signer)(self, signed, delivery)
        if self.window_s is not None and signed.timestamp is not None:
            check_timestamp(signed.timestamp, delivery.now_s, self.window_s)
        return mode


def check_timestamp(timestamp: int, now_s: float, tolerance_s: int) -> None:
    """Raise ``timestamp_out_of_tolerance`` when ``timestamp`` is more than ``tolerance_s``
    seconds before or after ``now_s``, compared in whole seconds (CONTRACT 4.3: the second
    ``now_s`` is in, so 300.9 s is in and 301 s out, as a provider's whole-second stamp
    and a receiver's clock read them); the refusal says by how much it was missed, so a
    merchant can tell a slow clock from a replay."""
    offset = math.floor(now_s) - timestamp
    if -tolerance_s <= offset <= tolerance_s:
        return
    missed = abs(offset)
    when = f"{missed} seconds old" if offset > 0 else f"{missed} seconds in the future"
    raise SignatureInvalid(
        "timestamp_out_of_tolerance",
        f"The signature's timestamp is {when} (at most {tolerance_s} allowed).",
    )


async def hmac_signer(scheme: WebhookScheme, signed: Signed, delivery: Delivery) -> str:
    """The first mode any of whose secrets signed the body (``signing.signing_mode``)."""
    return signing_mode(
        delivery.credentials,
        scheme.secrets,
        lambda secrets: scheme.matches(signed, delivery.body, secrets),
    )


__all__ = ["WINDOW_S", "Signed", "WebhookScheme", "body_only", "check_timestamp", "hmac_signer"]
