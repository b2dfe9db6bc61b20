"""Signature headers of one timestamp and HMAC-SHA256 signatures of ``<timestamp><joiner><raw
body>``, as Stripe (``t=..,v1=..``) and Paddle (``ts=..;h1=..``) send them. Pure: no I/O, no
clock; each provider's module declares its ``Scheme``, and ``Scheme.webhook`` makes it the
adapter's ``WebhookScheme`` (``edge.providers.verifying`` composes the checks).

The header's format, as stripe-python's ``_webhook.py`` and Paddle's SDK read it: several
signatures may come (a provider rotating a secret), and keys the scheme does not know are
skipped: a scheme a provider adds later must not turn deliveries away while the known one still
verifies.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

from edge.providers.base import SignatureInvalid
from edge.providers.signing import no_matching_signature
from edge.providers.verifying import WINDOW_S, Signed, WebhookScheme, check_timestamp

_TIMESTAMP = re.compile(r"[0-9]{1,12}")


@dataclass(frozen=True)
class Scheme:
    header: str  # the header's name, for messages: "Stripe-Signature"
    separator: str  # between items: "," or ";"
    timestamp_key: str  # "t" or "ts"
    signature_key: str  # "v1" or "h1"
    joiner: str  # between the timestamp and the body in what is signed: "." or ":"
    window_s: int = WINDOW_S  # the provider signs every attempt afresh (CONTRACT 4.3)

    def webhook(self, secrets: tuple[str, ...] = ("webhookSecret",)) -> WebhookScheme:
        """The adapter's scheme: this header, keyed with the mode's ``secrets`` fields."""
        return WebhookScheme(
            self.header, self.read, self.signs, secrets=secrets, window_s=self.window_s
        )

    @cached_property
    def _shared(self) -> WebhookScheme:
        return self.webhook()

    def read(self, headers: Mapping[str, str]) -> Signed:
        """The delivery's header (lower-case names), read by ``parse``."""
        timestamp, signatures = self.parse(headers.get(self.header.lower()))
        return Signed(signatures, timestamp)

    def signs(self, signed: Signed, body: bytes) -> bytes:
        """What the provider signs: the timestamp, the joiner, the exact body bytes."""
        return f"{signed.timestamp}{self.joiner}".encode() + body

    def compute(self, secret: str, body: bytes, timestamp: int) -> str:
        """The hex signature of ``body`` signed at ``timestamp`` with ``secret`` (UTF-8)."""
        return self._shared.compute(secret, Signed((), timestamp), body)

    def sign_header(self, secrets: str | Sequence[str], body: bytes, timestamp: int) -> str:
        """The header as the provider sends it: the timestamp, then one signature per secret."""
        keys = [secrets] if isinstance(secrets, str) else list(secrets)
        signatures = [f"{self.signature_key}={self.compute(k, body, timestamp)}" for k in keys]
        return self.separator.join([f"{self.timestamp_key}={timestamp}", *signatures])

    def parse(self, header: str | None) -> tuple[int, tuple[str, ...]]:
        """The timestamp and the signatures of a header: ``missing_header`` for None or blank;
        ``malformed_header`` when an item is not ``key=value``, the timestamp is absent,
        repeated or not a plain integer, or no signature is present."""
        if header is None or not header.strip():
            raise SignatureInvalid("missing_header", f"The {self.header} header is missing.")
        timestamps: list[str] = []
        signatures: list[str] = []
        for item in header.split(self.separator):
            item = item.strip()
            if not item:
                continue  # a trailing separator is sloppy, not dangerous
            key, sep, value = item.partition("=")
            if not sep:
                raise self._malformed("every item must be key=value")
            if key == self.timestamp_key:
                timestamps.append(value)
            elif key == self.signature_key:
                signatures.append(value)
        if len(timestamps) != 1 or not _TIMESTAMP.fullmatch(timestamps[0]):
            raise self._malformed(f"it needs exactly one integer {self.timestamp_key}=")
        if not signatures:
            raise self._malformed(f"it has no {self.signature_key}= signature")
        return int(timestamps[0]), tuple(signatures)

    def matches(
        self, timestamp: int, signatures: Sequence[str], body: bytes, secrets: Sequence[str]
    ) -> bool:
        """True iff any of ``signatures`` signs ``body`` at ``timestamp`` under any of
        ``secrets`` (every pair compared in constant time)."""
        return self._shared.matches(Signed(tuple(signatures), timestamp), body, secrets)

    def verify(
        self,
        header: str | None,
        body: bytes,
        secrets: Sequence[str],
        now_s: float,
        tolerance_s: int | None = None,
    ) -> None:
        """Return if ``header`` is a fresh signature of ``body`` by one of ``secrets``; else
        raise ``SignatureInvalid`` with its reason, in the order ``WebhookScheme.verify``
        checks (the signature before the timestamp)."""
        timestamp, signatures = self.parse(header)
        if not self.matches(timestamp, signatures, body, secrets):
            raise no_matching_signature()
        check_timestamp(timestamp, now_s, self.window_s if tolerance_s is None else tolerance_s)

    def _malformed(self, why: str) -> SignatureInvalid:
        return SignatureInvalid(
            "malformed_header", f"The {self.header} header is malformed: {why}."
        )


__all__ = ["Scheme", "check_timestamp", "no_matching_signature"]
