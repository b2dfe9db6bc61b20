"""Webhook verification composed from each provider's declared scheme
(``edge.providers.verifying``): every provider that reads webhooks declares one, and the shared
steps run in CONTRACT 4.3's order whoever declared it."""

from __future__ import annotations

from collections.abc import Mapping

import httpx
import pytest

from edge.providers.base import Delivery, SignatureInvalid
from edge.providers.registry import PROVIDERS
from edge.providers.verifying import WINDOW_S, Signed, WebhookScheme

NOW = 1_800_000_000
UNUSED_HTTP = httpx.AsyncClient()


def test_a_provider_reads_webhooks_exactly_when_it_declares_how_they_are_signed() -> None:
    for provider in PROVIDERS.values():
        assert (provider.webhook is None) == (provider.read_event is None), provider.name


def test_only_a_check_that_may_call_out_is_made_off_the_projects_actor() -> None:
    """An HMAC is checked by the actor in place, in the delivery's one message; PayPal's
    certificate may be fetched, so its check runs in the caller's task (a second message)."""
    offline = {name for name, p in PROVIDERS.items() if p.verifies_offline}
    assert offline == set(PROVIDERS) - {"paypal"}

    class OwnCheck(type(PROVIDERS["stripe"])):  # type: ignore[misc]
        async def verify_webhook(self, delivery: Delivery) -> str:
            return "test"

    assert not OwnCheck(**PROVIDERS["stripe"].__dict__).verifies_offline


def test_the_declared_timestamp_policies() -> None:
    windows = {name: p.signature_window_s for name, p in PROVIDERS.items()}
    # signed afresh on every attempt: the window; retries that resend the first signature: none
    assert windows == {
        "stripe": WINDOW_S,
        "paddle": WINDOW_S,
        "paypal": None,
        "btcpay": None,
        "manual": None,
    }
    assert WINDOW_S == 300


def _read(headers: Mapping[str, str]) -> Signed:
    value = headers.get("x-sig")
    if value is None:
        raise SignatureInvalid("missing_header", "The X-Sig header is missing.")
    at, _, digest = value.partition(":")
    return Signed((digest,), int(at))


def _signs(signed: Signed, body: bytes) -> bytes:
    return f"{signed.timestamp}|".encode() + body


SCHEME = WebhookScheme("X-Sig", _read, _signs, secrets=("webhookSecret", "oldSecret"))


def _delivery(header: str | None, credentials: dict, now: float = NOW) -> Delivery:
    headers = {} if header is None else {"x-sig": header}
    return Delivery(headers, b"{}", credentials, now, UNUSED_HTTP)


async def test_a_declared_scheme_gets_every_shared_step() -> None:
    signature = SCHEME.compute("k2", Signed((), NOW), b"{}")
    header = f"{NOW}:{signature}"
    both = {"test": {"webhookSecret": "k1"}, "live": {"webhookSecret": "k3", "oldSecret": "k2"}}
    assert await SCHEME.verify(_delivery(header, both)) == "live"  # a rotated secret
    cases = [
        (_delivery(None, both), "missing_header"),
        (_delivery(f"{NOW}:{'0' * 64}", both), "no_matching_signature"),
        (_delivery(header, {"test": {"webhookSecret": "k1"}}), "no_matching_signature"),
        (_delivery(header, both, NOW + WINDOW_S + 1), "timestamp_out_of_tolerance"),
        # a forgery is a forgery whatever its age: the signature is checked first
        (_delivery(f"{NOW}:{'0' * 64}", both, NOW + 10 * WINDOW_S), "no_matching_signature"),
    ]
    for delivery, reason in cases:
        with pytest.raises(SignatureInvalid) as caught:
            await SCHEME.verify(delivery)
        assert caught.value.reason == reason
    assert await SCHEME.verify(_delivery(header, both, NOW + WINDOW_S)) == "live"
