"""Signature headers of one timestamp and HMAC-SHA256 signatures of ``<timestamp><joiner><raw
body>``, as Stripe (``t=..,v1=..``) and Paddle (``ts=..;h1=..``) send them. Pure: no I/O, no
clock; each provider's module declares its ``Scheme``.

Order of checks, as in stripe-python's ``_webhook.py`` and Paddle's SDK: the header is parsed,
then the signature is checked, then the timestamp, so a stale but genuine delivery is reported
as ``timestamp_out_of_tolerance`` and a forgery as ``no_matching_signature``, whatever its age.
Several signatures may come (a provider rotating a secret) and several secrets may be tried (the
node's own rotation): any pair may match, every pair is compared in constant time. Keys the
scheme does not know are skipped: a scheme a provider adds later must not turn deliveries away
while the known one still verifies. The timestamp window applies both ways (CONTRACT 4.3), and
the refusal says by how much it was missed, so a merchant can tell a slow clock from a replay.
"""

from __future__ import annotations

import hashlib
import hmac
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from edge.providers.base import SignatureInvalid
from edge.providers.signing import no_matching_signature

_TIMESTAMP = re.compile(r"[0-9]{1,12}")


@dataclass(frozen=True)
class Scheme:
    header: str  # the header's name, for messages: "Stripe-Signature"
    separator: str  # between items: "," or ";"
    timestamp_key: str  # "t" or "ts"
    signature_key: str  # "v1" or "h1"
    joiner: str  # between the timestamp and the body in what is signed: "." or ":"
    window_s: int = 300  # the provider signs every attempt afresh (CONTRACT 4.3)

    def compute(self, secret: str, body: bytes, timestamp: int) -> str:
        """The hex signature of ``body`` signed at ``timestamp`` with ``secret`` (UTF-8)."""
        signed = f"{timestamp}{self.joiner}".encode() + body
        return hmac.new(secret.encode("utf-8"), signed, hashlib.sha256).hexdigest()

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
        ``secrets``."""
        matched = False
        for secret in secrets:
            expected = self.compute(secret, body, timestamp).encode()
            for candidate in signatures:
                # no early exit: the time taken does not say which pair matched
                matched |= hmac.compare_digest(expected, candidate.encode("utf-8", "replace"))
        return matched

    def verify(
        self,
        header: str | None,
        body: bytes,
        secrets: Sequence[str],
        now_s: float,
        tolerance_s: int | None = None,
    ) -> None:
        """Return if ``header`` is a fresh signature of ``body`` by one of ``secrets``; else
        raise ``SignatureInvalid`` with its reason."""
        timestamp, signatures = self.parse(header)
        if not self.matches(timestamp, signatures, body, secrets):
            raise no_matching_signature()
        check_timestamp(timestamp, now_s, self.window_s if tolerance_s is None else tolerance_s)

    def _malformed(self, why: str) -> SignatureInvalid:
        return SignatureInvalid(
            "malformed_header", f"The {self.header} header is malformed: {why}."
        )


def check_timestamp(timestamp: int, now_s: float, tolerance_s: int) -> None:
    """Raise ``timestamp_out_of_tolerance`` when ``timestamp`` is more than ``tolerance_s``
    seconds before or after ``now_s``."""
    offset = now_s - timestamp  # exact: 300.5 s is more than 300 s (CONTRACT 4.3)
    if -tolerance_s <= offset <= tolerance_s:
        return
    missed = math.ceil(abs(offset))
    when = f"{missed} seconds old" if offset > 0 else f"{missed} seconds in the future"
    raise SignatureInvalid(
        "timestamp_out_of_tolerance",
        f"The signature's timestamp is {when} (at most {tolerance_s} allowed).",
    )


__all__ = ["Scheme", "check_timestamp", "no_matching_signature"]
