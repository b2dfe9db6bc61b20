"""Our Stripe-Signature agrees with the official stripe package in both directions."""

from __future__ import annotations

import json
import time

import pytest
import stripe

from edge.providers.stripe.signature import sign_header, verify
from edge.sim.stripe import deliveries

SECRET = "whsec_test_secret_0123456789abcdef"
OTHER = "whsec_other_secret_fedcba9876543210"
BODY = json.dumps({"id": "evt_1", "object": "event", "type": "charge.refunded"}).encode()


def test_what_we_sign_the_official_library_accepts() -> None:
    now = int(time.time())
    event = stripe.Webhook.construct_event(BODY, sign_header(SECRET, BODY, now), SECRET)
    assert event["id"] == "evt_1"
    with pytest.raises(stripe.SignatureVerificationError):
        stripe.Webhook.construct_event(BODY, sign_header(OTHER, BODY, now), SECRET)


def test_the_delivery_builder_speaks_stripes_format() -> None:
    # what the simulator and every test send (edge.sim.stripe.deliveries)
    headers = deliveries.signed(BODY, SECRET)
    assert headers["Content-Type"] == "application/json"
    event = stripe.Webhook.construct_event(BODY, headers["Stripe-Signature"], SECRET)
    assert event["id"] == "evt_1"
    rolled = deliveries.signed(BODY, [OTHER, SECRET])["Stripe-Signature"]
    assert stripe.Webhook.construct_event(BODY, rolled, SECRET)["id"] == "evt_1"
    with pytest.raises(stripe.SignatureVerificationError):
        stale = deliveries.signed(BODY, SECRET, int(time.time()) - 301)["Stripe-Signature"]
        stripe.Webhook.construct_event(BODY, stale, SECRET, tolerance=300)


def test_what_the_official_library_signs_we_accept() -> None:
    now = int(time.time())
    payload = f"{now}.{BODY.decode()}"
    signature = stripe.WebhookSignature._compute_signature(payload, SECRET)
    verify(f"t={now},v1={signature}", BODY, [SECRET], now)
