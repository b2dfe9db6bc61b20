"""BTCPay Server's simulation: the simulator, ``edge trigger``'s signed deliveries, the demo's
credentials (a store and a webhook made on the simulator)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx

from edge.providers.btcpay import BTCPAY
from edge.sim.btcpay import deliveries
from edge.sim.btcpay.events import SUPPORTED_TRIGGERS, delivery_id, event_for_trigger
from edge.sim.btcpay.server import BTCPaySimulator
from edge.sim.registration import Registration, Simulator
from edge.sim.trigger import Trigger

DEMO_BTCPAY_KEY = "demo-btcpay-api-key-0123456789"


async def _signature(
    http: httpx.AsyncClient, credentials: Mapping[str, Any], body: bytes
) -> dict[str, str]:
    return deliveries.signed(body, credentials["webhookSecret"])


def wire(
    sim: BTCPaySimulator, webhook_url: str, api_key: str = DEMO_BTCPAY_KEY
) -> tuple[dict[str, Any], str]:
    """Test-mode credentials of a store made at ``sim`` for ``api_key``, with a webhook of the
    store to ``webhook_url``, and that webhook's id: how the demo and the tests wire BTCPay
    Server to its simulator."""
    store_id = sim.register_store(api_key)
    webhook_id, secret = sim.register_webhook(store_id, webhook_url)
    made = {"serverUrl": sim.url, "apiKey": api_key, "storeId": store_id, "webhookSecret": secret}
    return made, webhook_id


def _demo(sim: Simulator | None, webhook_url: str) -> dict[str, Any]:
    assert isinstance(sim, BTCPaySimulator)
    return wire(sim, webhook_url)[0]


REGISTRATION = Registration(
    BTCPAY,
    simulator=BTCPaySimulator,
    trigger=Trigger(SUPPORTED_TRIGGERS, event_for_trigger, _signature, delivery_id),
    demo=_demo,
)
