"""The one place a provider is registered: its adapter, its simulator, what ``edge trigger``
can send for it and how ``edge serve --demo`` wires it. Everything else (the actors, the
follow-up worker, the trigger, the demo) iterates ``REGISTRATIONS`` or looks a name up in it.

Adding a provider: its package under ``edge/providers/``, its simulator under ``edge/sim/``, and
one ``Registration`` below.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlsplit

import httpx
import trio

from edge.errors import Conflict
from edge.providers.base import Provider
from edge.providers.btcpay import BTCPAY
from edge.providers.btcpay.signature import sign_header as btcpay_sign_header
from edge.providers.manual import MANUAL
from edge.providers.paddle import PADDLE
from edge.providers.paddle.signature import sign_header as paddle_sign_header
from edge.providers.paypal import PAYPAL
from edge.providers.stripe import STRIPE
from edge.providers.stripe.signature import sign_header
from edge.sim.btcpay import SUPPORTED_TRIGGERS as BTCPAY_TRIGGERS
from edge.sim.btcpay import BTCPaySimulator
from edge.sim.btcpay import delivery_id as btcpay_delivery_id
from edge.sim.btcpay import event_for_trigger as btcpay_event_for_trigger
from edge.sim.paddle import SUPPORTED_TRIGGERS as PADDLE_TRIGGERS
from edge.sim.paddle import PaddleSimulator
from edge.sim.paddle import event_for_trigger as paddle_event_for_trigger
from edge.sim.paypal import SUPPORTED_TRIGGERS as PAYPAL_TRIGGERS
from edge.sim.paypal import PayPalSimulator
from edge.sim.paypal import event_for_trigger as paypal_event_for_trigger
from edge.sim.stripe import SUPPORTED_TRIGGERS, StripeSimulator, event_for_trigger
from edge.sim.trigger import Trigger


class Simulator(Protocol):
    """A loopback stand-in for a provider: ``url = await nursery.start(sim.run)``."""

    url: str

    async def run(self, *, task_status: trio.TaskStatus[str] = ...) -> None: ...

    def stop(self) -> None: ...


# (the running simulator or None, the node's webhook URL for the demo project) -> the test-mode
# credentials that point the provider at it
DemoCredentials = Callable[[Simulator | None, str], dict[str, Any]]
# the running simulator -> the address of its card form for a ``token`` checkout, with
# ``{token}`` in it: the demo shop's ``cardForm`` hook opens it (standing in for Paddle.js)
CardForm = Callable[[Simulator], str]


@dataclass(frozen=True)
class Registration:
    adapter: Provider
    simulator: Callable[[], Simulator] | None = None  # a new, not yet running simulator
    trigger: Trigger | None = None  # ``edge trigger``: simulated, signed deliveries
    demo: DemoCredentials | None = None  # ``--demo``: enabled, in registration order
    card_form: CardForm | None = None  # ``--demo``: where the shop's cardForm hook goes
    demo_label: str | None = None  # ``--demo``: told apart from another of the same kind

    @property
    def name(self) -> str:
        return self.adapter.name


def _event_id(key: str) -> Callable[[Mapping[str, Any]], str]:
    return lambda event: str(event[key])


# --- Stripe ---------------------------------------------------------------------------------

DEMO_SECRET_KEY = "sk_test_demo0123456789abcdefghij"


async def _stripe_signature(
    http: httpx.AsyncClient, credentials: Mapping[str, Any], body: bytes
) -> dict[str, str]:
    return {"Stripe-Signature": sign_header(credentials["webhookSecret"], body, int(time.time()))}


def _stripe_demo(sim: Simulator | None, webhook_url: str) -> dict[str, Any]:
    assert isinstance(sim, StripeSimulator)
    return {
        "secretKey": DEMO_SECRET_KEY,
        "publishableKey": "pk_test_demo0123456789abcdefghij",
        "webhookSecret": sim.register_endpoint(DEMO_SECRET_KEY, webhook_url),
        "apiBase": sim.url,
    }


# --- PayPal ---------------------------------------------------------------------------------

DEMO_PAYPAL_CLIENT = ("demo-client-0123456789", "demo-secret-0123456789")


async def _paypal_signature(
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


def _paypal_demo(sim: Simulator | None, webhook_url: str) -> dict[str, Any]:
    assert isinstance(sim, PayPalSimulator)
    client_id, secret = DEMO_PAYPAL_CLIENT
    return {
        "clientId": client_id,
        "clientSecret": secret,
        "webhookId": sim.register_webhook(client_id, secret, webhook_url),
        "apiBase": sim.url,
        "certHosts": [urlsplit(sim.url).hostname],
    }


# --- Paddle ---------------------------------------------------------------------------------

DEMO_PADDLE_KEY = "pdl_sdbx_apikey_demo0123456789abcdefghij"


async def _paddle_signature(
    http: httpx.AsyncClient, credentials: Mapping[str, Any], body: bytes
) -> dict[str, str]:
    signed = paddle_sign_header(credentials["webhookSecret"], body, int(time.time()))
    return {"Paddle-Signature": signed}


def _paddle_demo(sim: Simulator | None, webhook_url: str) -> dict[str, Any]:
    assert isinstance(sim, PaddleSimulator)
    return {
        "apiKey": DEMO_PADDLE_KEY,
        "clientToken": "test_demo0123456789abcdefghij",
        "webhookSecret": sim.register_destination(DEMO_PADDLE_KEY, webhook_url),
        "apiBase": sim.url,
    }


def _paddle_card_form(sim: Simulator) -> str:
    return f"{sim.url}/checkout/{{token}}"


# --- BTCPay Server ---------------------------------------------------------------------------

DEMO_BTCPAY_KEY = "demo-btcpay-api-key-0123456789"


async def _btcpay_signature(
    http: httpx.AsyncClient, credentials: Mapping[str, Any], body: bytes
) -> dict[str, str]:
    return {"BTCPay-Sig": btcpay_sign_header(credentials["webhookSecret"], body)}


def _btcpay_demo(sim: Simulator | None, webhook_url: str) -> dict[str, Any]:
    assert isinstance(sim, BTCPaySimulator)
    store_id = sim.register_store(DEMO_BTCPAY_KEY)
    _, secret = sim.register_webhook(store_id, webhook_url)
    return {
        "serverUrl": sim.url,
        "apiKey": DEMO_BTCPAY_KEY,
        "storeId": store_id,
        "webhookSecret": secret,
    }


# --- Pay by mail ----------------------------------------------------------------------------

DEMO_MAILING_ADDRESS = {
    "name": "Demo Shop Ltd",
    "lines": ["1 Main Street", "London"],
    "country": "GB",
}


def _manual_demo(sim: Simulator | None, webhook_url: str) -> dict[str, Any]:
    return {"mailingAddress": DEMO_MAILING_ADDRESS}


REGISTRATIONS: dict[str, Registration] = {
    r.name: r
    for r in (
        Registration(
            STRIPE,
            simulator=StripeSimulator,
            trigger=Trigger(SUPPORTED_TRIGGERS, event_for_trigger, _stripe_signature),
            demo=_stripe_demo,
        ),
        Registration(
            PAYPAL,
            simulator=PayPalSimulator,
            trigger=Trigger(PAYPAL_TRIGGERS, paypal_event_for_trigger, _paypal_signature),
            demo=_paypal_demo,
        ),
        Registration(
            PADDLE,
            simulator=PaddleSimulator,
            trigger=Trigger(
                PADDLE_TRIGGERS, paddle_event_for_trigger, _paddle_signature, _event_id("event_id")
            ),
            demo=_paddle_demo,
            card_form=_paddle_card_form,
            demo_label="Paddle (card form)",
        ),
        Registration(
            BTCPAY,
            simulator=BTCPaySimulator,
            trigger=Trigger(
                BTCPAY_TRIGGERS, btcpay_event_for_trigger, _btcpay_signature, btcpay_delivery_id
            ),
            demo=_btcpay_demo,
        ),
        Registration(MANUAL, demo=_manual_demo),
    )
}

# The adapters, by the name used in paths (CONTRACT 4.2).
PROVIDERS: dict[str, Provider] = {name: r.adapter for name, r in REGISTRATIONS.items()}


async def send_simulated(
    http: httpx.AsyncClient,
    node_url: str,
    project_id: str,
    provider: str,
    event_type: str,
    material: Mapping[str, Any],
) -> dict[str, Any]:
    """``edge trigger``: deliver a signed simulated ``event_type`` through the provider's
    registered ``Trigger``; ``Conflict not_simulated`` when it has none."""
    registration = REGISTRATIONS.get(provider)
    if registration is None or registration.trigger is None:
        simulated = ", ".join(name for name, r in REGISTRATIONS.items() if r.trigger)
        raise Conflict("not_simulated", f"There is no simulator for {provider}; try: {simulated}.")
    return await registration.trigger.send(
        http, node_url, project_id, provider, event_type, material
    )
