"""Stripe's simulation: the simulator, ``edge trigger``'s signed events, the demo's credentials."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx

from edge.providers.stripe import STRIPE
from edge.sim.registration import Registration, Simulator
from edge.sim.stripe import deliveries
from edge.sim.stripe.events import SUPPORTED_TRIGGERS, event_for_trigger
from edge.sim.stripe.server import StripeSimulator
from edge.sim.trigger import Trigger

DEMO_SECRET_KEY = "sk_test_demo0123456789abcdefghij"


async def _signature(
    http: httpx.AsyncClient, credentials: Mapping[str, Any], body: bytes
) -> dict[str, str]:
    return deliveries.signed(body, credentials["webhookSecret"])


def credentials(
    sim: StripeSimulator, webhook_url: str, secret_key: str = DEMO_SECRET_KEY
) -> dict[str, Any]:
    """Test-mode credentials of the account ``secret_key`` at ``sim``, with an endpoint made
    there for ``webhook_url``: how the demo and the tests wire Stripe to its simulator."""
    return {
        "secretKey": secret_key,
        "publishableKey": "pk_test_" + secret_key.removeprefix("sk_test_"),
        "webhookSecret": sim.register_endpoint(secret_key, webhook_url),
        "apiBase": sim.url,
    }


def _demo(sim: Simulator | None, webhook_url: str) -> dict[str, Any]:
    assert isinstance(sim, StripeSimulator)
    return credentials(sim, webhook_url)


REGISTRATION = Registration(
    STRIPE,
    simulator=StripeSimulator,
    trigger=Trigger(SUPPORTED_TRIGGERS, event_for_trigger, _signature),
    demo=_demo,
)
