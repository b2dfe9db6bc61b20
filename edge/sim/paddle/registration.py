"""Paddle's simulation: the simulator, ``edge trigger``'s signed events, the demo's credentials
and its card form (standing in for Paddle.js)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx

from edge.providers.paddle import PADDLE
from edge.sim.paddle import deliveries
from edge.sim.paddle.events import SUPPORTED_TRIGGERS, event_for_trigger
from edge.sim.paddle.server import PaddleSimulator
from edge.sim.registration import Registration, Simulator
from edge.sim.trigger import Trigger

DEMO_PADDLE_KEY = "pdl_sdbx_apikey_demo0123456789abcdefghij"
DEMO_CLIENT_TOKEN = "test_demo0123456789abcdefghij"


async def _signature(
    http: httpx.AsyncClient, credentials: Mapping[str, Any], body: bytes
) -> dict[str, str]:
    return deliveries.signed(body, credentials["webhookSecret"])


def _event_id(event: Mapping[str, Any]) -> str:
    return str(event["event_id"])


def credentials(
    sim: PaddleSimulator,
    webhook_url: str,
    api_key: str = DEMO_PADDLE_KEY,
    client_token: str = DEMO_CLIENT_TOKEN,
) -> dict[str, Any]:
    """Test-mode credentials of the account ``api_key`` at ``sim``, with a notification
    destination made there for ``webhook_url``: how the demo and the tests wire Paddle to its
    simulator."""
    return {
        "apiKey": api_key,
        "clientToken": client_token,
        "webhookSecret": sim.register_destination(api_key, webhook_url),
        "apiBase": sim.url,
    }


def _demo(sim: Simulator | None, webhook_url: str) -> dict[str, Any]:
    assert isinstance(sim, PaddleSimulator)
    return credentials(sim, webhook_url)


def _card_form(sim: Simulator) -> str:
    return f"{sim.url}/checkout/{{token}}"


REGISTRATION = Registration(
    PADDLE,
    simulator=PaddleSimulator,
    trigger=Trigger(SUPPORTED_TRIGGERS, event_for_trigger, _signature, _event_id),
    demo=_demo,
    card_form=_card_form,
    demo_label="Paddle (card form)",
)
