"""Stripe-Signature: the exact reasons of CONTRACT 4.3 and rotation (agreement with the official
stripe package: tests/conformance/test_stripe_signature_sdk.py)."""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import json

import httpx
import pytest

from edge.providers.base import Delivery, SignatureInvalid
from edge.providers.stripe import STRIPE
from edge.providers.stripe.signature import WINDOW_S, parse_header, sign_header, verify

SECRET = "whsec_test_secret_0123456789abcdef"
OTHER = "whsec_other_secret_fedcba9876543210"
BODY = json.dumps({"id": "evt_1", "object": "event", "type": "charge.refunded"}).encode()
NOW = 1_800_000_000
# Stripe's check never calls out; the client is there because the interface hands every adapter one.
UNUSED_HTTP = httpx.AsyncClient()


def reason_of(
    header: str | None, body: bytes = BODY, secrets: tuple[str, ...] = (SECRET,), now: int = NOW
) -> str:
    with pytest.raises(SignatureInvalid) as caught:
        verify(header, body, list(secrets), now)
    return caught.value.reason


def test_a_fresh_signature_verifies() -> None:
    verify(sign_header(SECRET, BODY, NOW), BODY, [SECRET], NOW)


def test_the_key_is_the_whole_whsec_string_not_its_base64_payload() -> None:
    expected = hmac.new(SECRET.encode(), f"{NOW}.".encode() + BODY, hashlib.sha256).hexdigest()
    assert sign_header(SECRET, BODY, NOW) == f"t={NOW},v1={expected}"


def test_tampered_body_and_wrong_secret_do_not_match() -> None:
    header = sign_header(SECRET, BODY, NOW)
    assert reason_of(header, body=BODY + b" ") == "no_matching_signature"
    assert reason_of(header, secrets=(OTHER,)) == "no_matching_signature"
    assert reason_of(header, secrets=()) == "no_matching_signature"


@pytest.mark.parametrize("header", [None, "", "   "])
def test_missing_header(header: str | None) -> None:
    assert reason_of(header) == "missing_header"


@pytest.mark.parametrize(
    "header",
    [
        "garbage",
        f"v1={'a' * 64}",  # no t
        f"t=abc,v1={'a' * 64}",  # t not an integer
        f"t=-5,v1={'a' * 64}",
        f"t=1e9,v1={'a' * 64}",
        f"t={NOW}",  # no v1
        f"t={NOW},v0={'a' * 64}",  # only another scheme
        f"t={NOW},t={NOW},v1={'a' * 64}",  # t twice
        f"t={NOW},v1",  # item without '='
    ],
)
def test_malformed_headers(header: str) -> None:
    assert reason_of(header) == "malformed_header"


def test_old_and_future_timestamps_are_out_of_tolerance() -> None:
    for ts in (NOW - WINDOW_S - 1, NOW + WINDOW_S + 1):
        assert reason_of(sign_header(SECRET, BODY, ts)) == "timestamp_out_of_tolerance"
    for ts in (NOW - WINDOW_S, NOW + WINDOW_S):  # the boundary is inside
        verify(sign_header(SECRET, BODY, ts), BODY, [SECRET], NOW)


def test_a_stale_forgery_is_reported_as_a_forgery() -> None:
    # Signature first, then time: an attacker learns nothing from the reason.
    stale = sign_header(OTHER, BODY, NOW - 10_000)
    assert reason_of(stale) == "no_matching_signature"


def test_any_v1_value_may_match_and_other_schemes_are_ignored() -> None:
    good = sign_header(SECRET, BODY, NOW).split(",v1=")[1]
    header = f"t={NOW},v0={'0' * 64},v1={'f' * 64},v1={good},"
    verify(header, BODY, [SECRET], NOW)
    assert parse_header(header) == (NOW, ("f" * 64, good))


def test_rotation_either_secret_verifies() -> None:
    verify(sign_header(OTHER, BODY, NOW), BODY, [SECRET, OTHER], NOW)
    verify(sign_header(SECRET, BODY, NOW), BODY, [SECRET, OTHER], NOW)


# --- the adapter: modes and rotation ----------------------------------------------------


def credentials(**modes: dict[str, str]) -> dict[str, dict[str, str]]:
    return {mode: {"secretKey": f"sk_{mode}_x", **values} for mode, values in modes.items()}


async def test_verify_webhook_answers_the_mode_whose_secret_signed() -> None:
    creds = credentials(test={"webhookSecret": SECRET}, live={"webhookSecret": OTHER})
    for secret, mode in ((SECRET, "test"), (OTHER, "live")):
        headers = {"stripe-signature": sign_header(secret, BODY, NOW)}
        assert await STRIPE.verify_webhook(Delivery(headers, BODY, creds, NOW, UNUSED_HTTP)) == mode


async def test_verify_webhook_takes_the_previous_secret_during_rotation() -> None:
    creds = credentials(live={"webhookSecret": SECRET, "previousWebhookSecret": OTHER})
    headers = {"stripe-signature": sign_header(OTHER, BODY, NOW)}
    assert await STRIPE.verify_webhook(Delivery(headers, BODY, creds, NOW, UNUSED_HTTP)) == "live"


@pytest.mark.parametrize(
    ("headers", "now", "reason"),
    [
        ({}, NOW, "missing_header"),
        ({"stripe-signature": "t=x"}, NOW, "malformed_header"),
        (
            {"stripe-signature": sign_header(SECRET, BODY, NOW)},
            NOW + 301,
            "timestamp_out_of_tolerance",
        ),
        (
            {"stripe-signature": sign_header("whsec_nobody", BODY, NOW)},
            NOW,
            "no_matching_signature",
        ),
    ],
)
async def test_verify_webhook_reasons(headers: dict[str, str], now: int, reason: str) -> None:
    creds = credentials(test={"webhookSecret": OTHER}, live={"webhookSecret": SECRET})
    with pytest.raises(SignatureInvalid) as caught:
        await STRIPE.verify_webhook(Delivery(headers, BODY, creds, now, UNUSED_HTTP))
    assert caught.value.reason == reason


async def test_verify_webhook_without_any_secret_matches_nothing() -> None:
    headers = {"stripe-signature": sign_header(SECRET, BODY, NOW)}
    with pytest.raises(SignatureInvalid) as caught:
        await STRIPE.verify_webhook(
            Delivery(headers, BODY, {"test": {"secretKey": "sk_test_x"}}, NOW, UNUSED_HTTP)
        )
    assert caught.value.reason == "no_matching_signature"


async def test_verify_webhook_uses_the_adapters_own_window() -> None:
    assert STRIPE.signature_window_s == WINDOW_S == 300
    assert STRIPE.webhook is not None
    narrow = dataclasses.replace(STRIPE, webhook=dataclasses.replace(STRIPE.webhook, window_s=10))
    creds = credentials(test={"webhookSecret": SECRET})
    headers = {"stripe-signature": sign_header(SECRET, BODY, NOW)}
    assert (
        await narrow.verify_webhook(Delivery(headers, BODY, creds, NOW + 10, UNUSED_HTTP)) == "test"
    )
    with pytest.raises(SignatureInvalid) as caught:
        await narrow.verify_webhook(Delivery(headers, BODY, creds, NOW + 11, UNUSED_HTTP))
    assert caught.value.reason == "timestamp_out_of_tolerance"
