"""Stripe objects and signed Stripe deliveries for tests, built by hand in Stripe's shapes.

``stripe_object`` reads the project's own example objects in tests/fixtures/stripe (one per
object kind the adapter reads, trimmed to the fields it uses, in the shapes of the API version
the simulator declares; tests/conformance checks them against the stripe SDK).
"""

from __future__ import annotations

import copy
import json
import time
from functools import cache
from pathlib import Path
from typing import Any

from edge.sim.stripe import deliveries
from edge.sim.stripe.objects import API_VERSION

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "stripe"
WEBHOOK_SECRET = "whsec_test_0123456789abcdefghijklmnop"
LIVE_WEBHOOK_SECRET = "whsec_live_0123456789abcdefghijklmnop"


def stripe_object(kind: str, **changes: Any) -> dict[str, Any]:
    """A fresh copy of the example object ``kind`` (``checkout_session``, ``invoice``, ...,
    ``event``: a whole envelope) with the top-level ``changes`` applied."""
    obj = copy.deepcopy(_example(kind))
    obj.update(changes)
    return obj


@cache
def _example(kind: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((FIXTURES / f"{kind}.json").read_text("utf-8"))
    return loaded


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
            "api_version": API_VERSION,
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
    """``body`` as Stripe delivers it, signed with the tests' webhook secret by default."""
    return deliveries.signed(body, secret, timestamp)
