"""One registration per provider, and the layers that must not reach around it."""

from __future__ import annotations

import ast
from pathlib import Path

import httpx
import pytest

from edge.errors import Conflict
from edge.providers.registry import PROVIDERS, REGISTRATIONS, send_simulated

EDGE = Path(__file__).parents[2] / "edge"


def test_registrations_name_their_adapters() -> None:
    assert list(REGISTRATIONS) == ["stripe", "paypal", "paddle", "btcpay", "manual"]
    for name, registration in REGISTRATIONS.items():
        assert registration.name == name
        assert PROVIDERS[name] is registration.adapter


def test_stripe_is_fully_registered() -> None:
    stripe = REGISTRATIONS["stripe"]
    assert stripe.simulator is not None and stripe.trigger is not None and stripe.demo
    assert "payment.succeeded" in stripe.trigger.events
    assert stripe.adapter.signature_window_s == 300


async def test_a_provider_without_a_trigger_is_refused() -> None:
    async with httpx.AsyncClient() as http:
        with pytest.raises(Conflict) as caught:
            await send_simulated(http, "http://127.0.0.1:9", "p", "manual", "payment.succeeded", {})
    assert caught.value.code == "not_simulated"
    assert "stripe" in caught.value.message


@pytest.mark.parametrize("path", sorted((EDGE / "http").glob("*.py")), ids=lambda p: p.name)
def test_http_never_imports_the_simulators(path: Path) -> None:
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            assert not (node.module or "").startswith("edge.sim")
        elif isinstance(node, ast.Import):
            assert not any(alias.name.startswith("edge.sim") for alias in node.names)
