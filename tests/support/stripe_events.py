"""Signed Stripe deliveries for tests, built by hand in Stripe's event envelope."""

from __future__ import annotations

import json
import time
from typing import Any

from edge.providers.stripe_signature import sign_header

WEBHOOK_SECRET = "whsec_test_0123456789abcdefghijklmnop"
LIVE_WEBHOOK_SECRET = "whsec_live_0123456789abcdefghijklmnop"


def stripe_credentials(
    api_base: str = "http://127.0.0.1:9", secret: str = WEBHOOK_SECRET, mode: str = "test"
) -> dict[str, Any]:
    return {
        "secretKey": f"sk_{mode}_0123456789abcdefghijklmnop",
        "publishableKey": f"pk_{mode}_0123456789abcdefghijklmnop",
        "webhookSecret": secret,
        "apiBase": api_base,
    }


def event_body(
    event_id: str, event_type: str, obj: dict[str, Any], livemode: bool = False
) -> bytes:
    return json.dumps(
        {
            "id": event_id,
            "object": "event",
            "api_version": "2024-06-20",
            "created": int(time.time()),
            "livemode": livemode,
            "pending_webhooks": 1,
            "request": {"id": None, "idempotency_key": None},
            "type": event_type,
            "data": {"object": obj},
        }
    ).encode()


def signed(
    body: bytes, secret: str = WEBHOOK_SECRET, timestamp: int | None = None
) -> dict[str, str]:
    return {
        "Stripe-Signature": sign_header(
            secret, body, int(time.time()) if timestamp is None else timestamp
        ),
        "Content-Type": "application/json",
    }
