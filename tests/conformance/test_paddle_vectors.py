"""Paddle's own signature vectors (paddle-python-sdk ``tests/Unit/Notification/test_Verifier.py``,
in ``../shared/provider-data/paddle/test_vectors.json``) verify with the adapter's signature
code, the rotation case included; the signer makes exactly Paddle's headers; and Paddle's own
Verifier accepts what the signer makes."""

from __future__ import annotations

import json
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
from paddle_billing.Notifications import Secret, Verifier

from edge.providers.base import Delivery, SignatureInvalid
from edge.providers.paddle import PADDLE
from edge.providers.paddle.signature import parse_header, sign_header, verify
from edge.sim.paddle import deliveries


@pytest.fixture(scope="module")
def vectors(provider_data: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(
        (provider_data / "paddle" / "test_vectors.json").read_text()
    )
    return loaded


def _body(provider_data: Path, name: str) -> bytes:
    # the signed string is the fixture's content with trailing whitespace stripped (README)
    return (provider_data / "paddle" / name).read_bytes().rstrip()


def test_each_vector_verifies_and_is_what_the_signer_makes(provider_data, vectors):
    assert vectors["vectors"]
    for vector in vectors["vectors"]:
        body = _body(provider_data, vector["payload_file"])
        header = vector["header_value"]
        ts, _ = parse_header(header)
        verify(header, body, [vectors["secret"]], now_s=ts)
        assert sign_header(vectors["secret"], body, ts) == header
        with pytest.raises(SignatureInvalid) as caught:
            verify(header, body + b" ", [vectors["secret"]], now_s=ts)
        assert caught.value.reason == "no_matching_signature"


def test_the_rotation_vector_matches_on_its_second_h1(vectors):
    rotation = vectors["rotation_vector"]
    header, body = rotation["header_value"], rotation["body"].encode()
    ts, signatures = parse_header(header)
    assert signatures[0] == "dummy" and len(signatures) == 2
    verify(header, body, [rotation["passing_secret"]], now_s=ts)
    with pytest.raises(SignatureInvalid):
        verify(header, body, [vectors["secret"]], now_s=ts)


async def test_the_adapter_takes_the_vectors_within_its_window_and_no_later(provider_data, vectors):
    vector = vectors["vectors"][0]
    body = _body(provider_data, vector["payload_file"])
    ts, _ = parse_header(vector["header_value"])
    headers = {"paddle-signature": vector["header_value"]}
    credentials = {
        "test": {"webhookSecret": "pdl_ntfset_other"},
        "live": {"webhookSecret": vectors["secret"]},
    }
    async with httpx.AsyncClient() as http:
        assert (
            await PADDLE.verify_webhook(Delivery(headers, body, credentials, ts + 299, http))
            == "live"
        )
        with pytest.raises(SignatureInvalid) as caught:
            await PADDLE.verify_webhook(Delivery(headers, body, credentials, ts + 301, http))
    assert caught.value.reason == "timestamp_out_of_tolerance"


def test_paddles_verifier_accepts_the_signer(provider_data, vectors):
    body = _body(provider_data, "special_chars_payload.json")
    header = sign_header(vectors["secret"], body, int(time.time()))
    request = SimpleNamespace(headers={"Paddle-Signature": header}, body=body)
    assert Verifier().verify(request, Secret(vectors["secret"]), verify_time_drift=True)
    request.body = body + b" "
    assert not Verifier().verify(request, Secret(vectors["secret"]), verify_time_drift=True)


def test_paddles_verifier_accepts_the_delivery_builder(provider_data, vectors):
    # what the simulator and every test send (edge.sim.paddle.deliveries)
    body = _body(provider_data, "special_chars_payload.json")
    headers = deliveries.signed(body, vectors["secret"])
    request = SimpleNamespace(headers={"Paddle-Signature": headers["Paddle-Signature"]}, body=body)
    assert Verifier().verify(request, Secret(vectors["secret"]), verify_time_drift=True)
