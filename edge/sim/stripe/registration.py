"""Stripe's simulation: the simulator, ``edge trigger``'s signed events, the demo's credentials."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import httpx

from edge.providers.stripe import STRIPE
from edge.providers.stripe.signature import sign_header
from edge.sim.registration import Registration, Simulator
from edge.sim.stripe.events import SUPPORTED_TRIGGERS, event_for_trigger
from edge.sim.stripe.server import StripeSimulator
from edge.sim.trigger import Trigger

DEMO_SECRET_KEY = "sk_test_demo0123456789abcdefghij"


async def _signature(
    http: httpx.AsyncClient, credentials: Mapping[str, Any], body: bytes
) -> dict[str, str]:
    return {"Stripe-Signature": sign_header(credentials["webhookSecret"], body, int(time.time()))}


def _demo(sim: Simulator | None, webhook_url: str) -> dict[str, Any]:
    assert isinstance(sim, StripeSimulator)
    return {
        "secretKey": DEMO_SECRET_KEY,
        "publishableKey": "pk_test_demo0123456789abcdefghij",
        "webhookSecret": sim.register_endpoint(DEMO_SECRET_KEY, webhook_url),
        "apiBase": sim.url,
    }


REGISTRATION = Registration(
    STRIPE,
    simulator=StripeSimulator,
    trigger=Trigger(SUPPORTED_TRIGGERS, event_for_trigger, _signature),
    demo=_demo,
)
