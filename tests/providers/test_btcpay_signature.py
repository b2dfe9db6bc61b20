"""BTCPay-Sig (PROVIDERS.md "BTCPay"): HMAC-SHA256 keyed with the secret's UTF-8 over the exact
body bytes, as BTCPay's WebhookSender computes it and its WebhooksTests recompute it."""

from __future__ import annotations

import hashlib
import hmac
import json

import httpx
import pytest

from edge.providers.base import Delivery, SignatureInvalid
from edge.providers.btcpay import BTCPAY, signature
from edge.sim.btcpay import objects

EVENT = {
    "deliveryId": "A1",
    "webhookId": "W1",
    "originalDeliveryId": "A1",
    "isRedelivery": False,
    "type": "InvoiceSettled",
    "timestamp": 1795254528,
    "storeId": "S1",
    "invoiceId": "I1",
    "metadata": {"orderId": "tx_01JD0000000000000000000001"},
    "manuallyMarked": False,
    "overPaid": False,
}


def test_it_is_standard_hmac_sha256():
    # RFC 4231, test case 2: key "Jefe"
    assert signature.compute("Jefe", b"what do ya want for nothing?") == (
        "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
    )


def test_as_btcpays_own_test_computes_it():
    # WebhooksTests.cs: "sha256=" + hex(HMACSHA256(UTF8("HelloWorld")).ComputeHash(body))
    body = objects.body(EVENT)
    expected = "sha256=" + hmac.new(b"HelloWorld", body, hashlib.sha256).hexdigest()
    assert signature.sign_header("HelloWorld", body) == expected


async def verify(headers: dict[str, str], body: bytes, **modes: str) -> str:
    credentials = {mode: {"webhookSecret": secret} for mode, secret in modes.items()}
    async with httpx.AsyncClient() as http:
        return await BTCPAY.verify_webhook(Delivery(headers, body, credentials, 0.0, http))


async def test_the_raw_indented_body_verifies_and_a_reserialized_one_does_not():
    raw = objects.body(EVENT)
    assert raw.startswith(b'{\n  "deliveryId": "A1",')
    header = {"btcpay-sig": signature.sign_header("HelloWorld", raw)}
    assert await verify(header, raw, live="HelloWorld") == "live"
    with pytest.raises(SignatureInvalid) as refused:
        await verify(header, json.dumps(EVENT).encode(), live="HelloWorld")
    assert refused.value.reason == "no_matching_signature"


async def test_the_mode_is_the_one_whose_secret_signed():
    raw = objects.body(EVENT)
    header = {"btcpay-sig": signature.sign_header("test-secret", raw)}
    assert await verify(header, raw, live="live-secret", test="test-secret") == "test"


async def test_no_window_applies_to_the_bodys_old_timestamp():
    # the third automatic retry comes 11+ minutes after the first delivery's timestamp
    raw = objects.body(EVENT)
    header = {"btcpay-sig": signature.sign_header("s", raw)}
    credentials = {"live": {"webhookSecret": "s"}}
    async with httpx.AsyncClient() as http:
        later = EVENT["timestamp"] + 86400.0  # type: ignore[operator]
        assert (
            await BTCPAY.verify_webhook(Delivery(header, raw, credentials, later, http)) == "live"
        )


@pytest.mark.parametrize(
    ("header", "reason"),
    [
        (None, "missing_header"),
        ("  ", "missing_header"),
        ("sha1=" + "0" * 64, "malformed_header"),
        ("sha256=" + "0" * 63, "malformed_header"),
        ("sha256=" + "g" * 64, "malformed_header"),
        ("0" * 64, "malformed_header"),
        ("sha256=" + "0" * 64, "no_matching_signature"),
    ],
)
async def test_refusals_say_why(header, reason):
    headers = {} if header is None else {"btcpay-sig": header}
    with pytest.raises(SignatureInvalid) as refused:
        await verify(headers, objects.body(EVENT), live="HelloWorld")
    assert refused.value.reason == reason


def test_upper_case_hex_is_read():
    raw = objects.body(EVENT)
    digest = signature.parse_header(
        signature.sign_header("k", raw).upper().replace("SHA256=", "sha256=")
    )
    assert signature.signature_matches(digest, raw, ["other", "k"])
