"""The simulators' registry: one line per provider, beside the adapters' own
(``edge.providers.registry``). The demo (``edge.demo``), the node's ``edge trigger`` (loaded on
its first use, ``edge.node``) and the tests look a provider's ``Registration`` up here.

Adding a provider: its adapter package under ``edge/providers/`` (one line in
``edge.providers.registry``), its simulator package under ``edge/sim/`` with a
``registration`` module, and one line below.
"""

from __future__ import annotations

from typing import Any

import httpx

from edge.domain.events import Simulated
from edge.errors import Conflict
from edge.sim import manual
from edge.sim.btcpay import registration as btcpay
from edge.sim.paddle import registration as paddle
from edge.sim.paypal import registration as paypal
from edge.sim.registration import Registration
from edge.sim.stripe import registration as stripe

REGISTRATIONS: dict[str, Registration] = {
    r.name: r
    for r in (
        stripe.REGISTRATION,
        paypal.REGISTRATION,
        paddle.REGISTRATION,
        btcpay.REGISTRATION,
        manual.REGISTRATION,
    )
}


async def send_simulated(http: httpx.AsyncClient, ask: Simulated) -> dict[str, Any]:
    """``edge trigger``: deliver a signed simulated ``event_type`` through the provider's
    registered ``Trigger``; ``Conflict not_simulated`` when it has none."""
    registration = REGISTRATIONS.get(ask.provider)
    if registration is None or registration.trigger is None:
        simulated = ", ".join(name for name, r in REGISTRATIONS.items() if r.trigger)
        raise Conflict(
            "not_simulated", f"There is no simulator for {ask.provider}; try: {simulated}."
        )
    return await registration.trigger.send(http, ask)
