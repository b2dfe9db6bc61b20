"""Paddle-Signature: the exact reasons of CONTRACT 4.3, several h1 during a rotation, the
adapter's choice of mode (agreement with Paddle's own vectors and Verifier:
tests/conformance/test_paddle_vectors.py)."""

from __future__ import annotations

import hashlib
import hmac
import json

import httpx
import pytest

from edge.providers.base import Delivery, SignatureInvalid
from edge.providers.paddle import PADDLE
from edge.providers.paddle.signature import WINDOW_S, parse_header, sign_header, verify

SECRET = "pdl_ntfset_01hs0t3tw21j988db1pam5xg8m_secretA"
OTHER = "pdl_ntfset_01hs0t3tw21j988db1pam5xg8m_secretB"
BODY = json.dumps({"event_id": "evt_1", "event_type": "transaction.paid", "data": {}}).encode()
NOW = 1_800_000_000
UNUSED_HTTP = httpx.AsyncClient()  # the interface hands every adapter one; Paddle's never calls


def reason_of(
    header: str | None, body: bytes = BODY, secrets: tuple[str, ...] = (SECRET,), now: int = NOW
) -> str:
    with pytest.raises(SignatureInvalid) as caught:
        verify(header, body, list(secrets), now)
    return caught.value.reason


def test_a_fresh_signature_verifies() -> None:
    verify(sign_header(SECRET, BODY, NOW), BODY, [SECRET], NOW)


def test_h1_is_hmac_sha256_of_ts_colon_body_keyed_with_the_secret_text() -> None:
    expected = hmac.new(SECRET.encode(), f"{NOW}:".encode() + BODY, hashlib.sha256).hexdigest()
    assert sign_header(SECRET, BODY, NOW) == f"ts={NOW};h1={expected}"


def test_tampered_body_and_wrong_secret_do_not_match() -> None:
    header = sign_header(SECRET, BODY, NOW)
    assert reason_of(header, body=BODY + b" ") == "no_matching_signature"
    assert reason_of(header, secrets=(OTHER,)) == "no_matching_signature"
    assert reason_of(header, secrets=()) == "no_matching_signature"
    # the timestamp is signed too: the same h1 under another ts is a forgery
    forged = header.replace(f"ts={NOW}", f"ts={NOW + 1}")
    assert reason_of(forged) == "no_matching_signature"


def test_any_h1_may_match_during_a_rotation() -> None:
    both = sign_header([OTHER, SECRET], BODY, NOW)
    assert both.count(";h1=") == 2
    verify(both, BODY, [SECRET], NOW)
    verify(both, BODY, [OTHER], NOW)
    assert parse_header(f"ts={NOW};h1=dummy;h1=abc") == (NOW, ("dummy", "abc"))


@pytest.mark.parametrize("header", [None, "", "   "])
def test_missing_header(header: str | None) -> None:
    assert reason_of(header) == "missing_header"


@pytest.mark.parametrize(
    "header",
    [
        "garbage",
        f"h1={'a' * 64}",  # no ts
        f"ts=abc;h1={'a' * 64}",  # ts not an integer
        f"ts={NOW};ts={NOW};h1={'a' * 64}",  # ts twice
        f"ts={NOW}",  # no h1
        f"ts={NOW},h1={'a' * 64}",  # Stripe's separator: the ts item reads "NOW,h1=..."
    ],
)
def test_malformed_header(header: str) -> None:
    assert reason_of(header) == "malformed_header"


def test_unknown_keys_are_skipped_not_refused() -> None:
    header = sign_header(SECRET, BODY, NOW) + ";h2=future"
    verify(header, BODY, [SECRET], NOW)


@pytest.mark.parametrize("offset", [WINDOW_S + 1, -(WINDOW_S + 1)])
def test_a_genuine_signature_out_of_the_window_says_so(offset: int) -> None:
    header = sign_header(SECRET, BODY, NOW + offset)
    assert reason_of(header) == "timestamp_out_of_tolerance"
    verify(
        sign_header(SECRET, BODY, NOW + (WINDOW_S if offset > 0 else -WINDOW_S)),
        BODY,
        [SECRET],
        NOW,
    )


def test_a_stale_forgery_is_a_forgery() -> None:
    assert reason_of(sign_header(OTHER, BODY, NOW - 10 * WINDOW_S)) == "no_matching_signature"


async def test_the_adapter_answers_the_mode_whose_secret_signed() -> None:
    credentials = {"test": {"webhookSecret": SECRET}, "live": {"webhookSecret": OTHER}}
    for secret, mode in ((SECRET, "test"), (OTHER, "live")):
        headers = {"paddle-signature": sign_header(secret, BODY, NOW)}
        assert (
            await PADDLE.verify_webhook(Delivery(headers, BODY, credentials, NOW, UNUSED_HTTP))
            == mode
        )
    with pytest.raises(SignatureInvalid) as caught:
        await PADDLE.verify_webhook(Delivery({}, BODY, credentials, NOW, UNUSED_HTTP))
    assert caught.value.reason == "missing_header"
    stale = {"paddle-signature": sign_header(OTHER, BODY, NOW - WINDOW_S - 1)}
    with pytest.raises(SignatureInvalid) as caught:
        await PADDLE.verify_webhook(Delivery(stale, BODY, credentials, NOW, UNUSED_HTTP))
    assert caught.value.reason == "timestamp_out_of_tolerance"
    with pytest.raises(SignatureInvalid) as caught:
        await PADDLE.verify_webhook(
            Delivery(
                {"paddle-signature": sign_header("pdl_other", BODY, NOW)},
                BODY,
                credentials,
                NOW,
                UNUSED_HTTP,
            )
        )
    assert caught.value.reason == "no_matching_signature"
