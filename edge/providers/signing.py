"""Which of a project's modes signed a webhook delivery: the one loop over the test and live
secrets that every HMAC-signed provider (Stripe, Paddle, BTCPay) shares. Pure: no I/O, no clock.

A project may hold test and live credentials for the same provider at once, and a provider may
have a second secret during a rotation (Stripe's ``previousWebhookSecret``): the mode is the one
any of whose secrets signed the body. A mode with no secret set is skipped, never matched by an
empty key.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from edge.providers.base import SignatureInvalid


def signing_mode(
    credentials: Mapping[str, Mapping[str, Any]],
    fields: Sequence[str],
    signed_by: Callable[[list[str]], bool],
) -> str:
    """The first mode of ``credentials`` whose secrets (the values of ``fields`` that are set)
    ``signed_by`` accepts; ``no_matching_signature`` when none does."""
    for mode, plain in credentials.items():
        secrets = [str(plain[name]) for name in fields if plain.get(name)]
        if secrets and signed_by(secrets):
            return mode
    raise no_matching_signature()


def no_matching_signature() -> SignatureInvalid:
    return SignatureInvalid(
        "no_matching_signature", "No signature matches the body and the webhook secret."
    )
