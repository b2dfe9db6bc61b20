"""Signed Stripe deliveries, as Stripe sends them: the one builder the simulator, ``edge
trigger`` and the tests use (tests/conformance checks its header against stripe-python's own
verification)."""

from __future__ import annotations

import time
from collections.abc import Sequence

from edge.providers.stripe.signature import STRIPE


def signed(
    body: bytes, secrets: str | Sequence[str], timestamp: int | None = None
) -> dict[str, str]:
    """The headers of ``body`` signed at ``timestamp`` (now by default: Stripe signs every
    attempt afresh) with each of ``secrets`` (one ``v1`` each, as during a secret's roll)."""
    at = int(time.time()) if timestamp is None else timestamp
    return {
        "Content-Type": "application/json",
        STRIPE.header: STRIPE.sign_header(secrets, body, at),
    }
