"""PayPal's simulation: the simulator, ``edge trigger``'s signed events, the demo's credentials."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

import httpx

from edge.errors import Conflict
from edge.providers.paypal import PAYPAL
from edge.sim.paypal.events import SUPPORTED_TRIGGERS, event_for_trigger
from edge.sim.paypal.server import PayPalSimulator
from edge.sim.registration import Registration, Simulator
from edge.sim.trigger import Trigger

DEMO_PAYPAL_CLIENT = ("demo-client-0123456789", "demo-secret-0123456789")


async def _signature(
    http: httpx.AsyncClient, credentials: Mapping[str, Any], body: bytes
) -> dict[str, str]:
    """PayPal signs with a private key only PayPal holds: a simulated delivery is signed by the
    simulator the credentials point at (its certificate is what the node fetches)."""
    base = credentials.get("apiBase")
    if not base:
        raise Conflict(
            "not_simulated",
            "PayPal deliveries can be simulated only when its apiBase is the PayPal simulator.",
        )
    answer = await http.post(
        f"{base}/sim/sign", params={"webhook_id": credentials["webhookId"]}, content=body
    )
    if answer.status_code != 200:
        raise Conflict("not_simulated", f"The PayPal simulator at {base} did not sign the event.")
    headers: dict[str, str] = answer.json()
    return headers


def credentials(
    sim: PayPalSimulator, webhook_url: str, client: tuple[str, str] = DEMO_PAYPAL_CLIENT
) -> dict[str, Any]:
    """Test-mode credentials of the app ``client`` (id, secret) at ``sim``, with a webhook
    subscription made there for ``webhook_url`` and the simulator's host allowed to serve the
    signing certificate: how the demo and the tests wire PayPal to its simulator."""
    client_id, secret = client
    return {
        "clientId": client_id,
        "clientSecret": secret,
        "webhookId": sim.register_webhook(client_id, secret, webhook_url),
        "apiBase": sim.url,
        "certHosts": [urlsplit(sim.url).hostname],
    }


def _demo(sim: Simulator | None, webhook_url: str) -> dict[str, Any]:
    assert isinstance(sim, PayPalSimulator)
    return credentials(sim, webhook_url)


REGISTRATION = Registration(
    PAYPAL,
    simulator=PayPalSimulator,
    trigger=Trigger(SUPPORTED_TRIGGERS, event_for_trigger, _signature),
    demo=_demo,
)
