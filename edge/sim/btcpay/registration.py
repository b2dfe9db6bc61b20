"""BTCPay Server's simulation: the simulator, ``edge trigger``'s signed deliveries, the demo's
credentials (a store and a webhook made on the simulator)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx

from edge.providers.btcpay import BTCPAY
from edge.providers.btcpay.signature import sign_header
from edge.sim.btcpay.events import SUPPORTED_TRIGGERS, delivery_id, event_for_trigger
from edge.sim.btcpay.server import BTCPaySimulator
from edge.sim.registration import Registration, Simulator
from edge.sim.trigger import Trigger

DEMO_BTCPAY_KEY = "demo-btcpay-api-key-0123456789"


async def _signature(
    http: httpx.AsyncClient, credentials: Mapping[str, Any], body: bytes
) -> dict[str, str]:
    return {"BTCPay-Sig": sign_header(credentials["webhookSecret"], body)}


def _demo(sim: Simulator | None, webhook_url: str) -> dict[str, Any]:
    assert isinstance(sim, BTCPaySimulator)
    store_id = sim.register_store(DEMO_BTCPAY_KEY)
    _, secret = sim.register_webhook(store_id, webhook_url)
    return {
        "serverUrl": sim.url,
        "apiKey": DEMO_BTCPAY_KEY,
        "storeId": store_id,
        "webhookSecret": secret,
    }


REGISTRATION = Registration(
    BTCPAY,
    simulator=BTCPaySimulator,
    trigger=Trigger(SUPPORTED_TRIGGERS, event_for_trigger, _signature, delivery_id),
    demo=_demo,
)
