"""Paddle's simulation: the simulator, ``edge trigger``'s signed events, the demo's credentials
and its card form (standing in for Paddle.js)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import httpx

from edge.providers.paddle import PADDLE
from edge.providers.paddle.signature import sign_header
from edge.sim.paddle.events import SUPPORTED_TRIGGERS, event_for_trigger
from edge.sim.paddle.server import PaddleSimulator
from edge.sim.registration import Registration, Simulator
from edge.sim.trigger import Trigger

DEMO_PADDLE_KEY = "pdl_sdbx_apikey_demo0123456789abcdefghij"


async def _signature(
    http: httpx.AsyncClient, credentials: Mapping[str, Any], body: bytes
) -> dict[str, str]:
    signed = sign_header(credentials["webhookSecret"], body, int(time.time()))
    return {"Paddle-Signature": signed}


def _event_id(event: Mapping[str, Any]) -> str:
    return str(event["event_id"])


def _demo(sim: Simulator | None, webhook_url: str) -> dict[str, Any]:
    assert isinstance(sim, PaddleSimulator)
    return {
        "apiKey": DEMO_PADDLE_KEY,
        "clientToken": "test_demo0123456789abcdefghij",
        "webhookSecret": sim.register_destination(DEMO_PADDLE_KEY, webhook_url),
        "apiBase": sim.url,
    }


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
