"""The simulators' registry (edge.sim.registry): one registration per provider, beside the
adapters' registry, and ``edge trigger``'s way to them."""

from __future__ import annotations

import httpx
import pytest

from edge.domain.events import SIMULATED, Simulated
from edge.errors import Conflict
from edge.providers.registry import PROVIDERS
from edge.sim.registry import REGISTRATIONS, send_simulated


def test_registrations_name_their_adapters() -> None:
    assert list(REGISTRATIONS) == ["stripe", "paypal", "paddle", "btcpay", "manual"]
    assert list(REGISTRATIONS) == list(PROVIDERS)
    for name, registration in REGISTRATIONS.items():
        assert registration.name == name
        assert PROVIDERS[name] is registration.adapter


def test_stripe_is_fully_registered() -> None:
    stripe = REGISTRATIONS["stripe"]
    assert stripe.simulator is not None and stripe.trigger is not None and stripe.demo
    assert "payment.succeeded" in stripe.trigger.events
    assert stripe.adapter.signature_window_s == 300


def test_the_simulators_together_send_every_type_the_api_reference_names() -> None:
    """The API reference's TriggerRequest lists ``SIMULATED`` without loading a simulator."""
    sent = {t for r in REGISTRATIONS.values() if r.trigger for t in r.trigger.events}
    assert sent == set(SIMULATED)


async def test_a_provider_without_a_trigger_is_refused() -> None:
    async with httpx.AsyncClient() as http:
        with pytest.raises(Conflict) as caught:
            await send_simulated(
                http, Simulated("http://127.0.0.1:9", "p", "manual", "payment.succeeded", {})
            )
    assert caught.value.code == "not_simulated"
    assert "stripe" in caught.value.message
