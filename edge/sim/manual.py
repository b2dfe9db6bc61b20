"""Pay by mail has nothing to simulate: nothing leaves the node. The demo gives it a mailing
address, and ``edge trigger`` has no deliveries for it (``409 not_simulated``)."""

from __future__ import annotations

from typing import Any

from edge.providers.manual import MANUAL
from edge.sim.registration import Registration, Simulator

DEMO_MAILING_ADDRESS = {
    "name": "Demo Shop Ltd",
    "lines": ["1 Main Street", "London"],
    "country": "GB",
}


def _demo(sim: Simulator | None, webhook_url: str) -> dict[str, Any]:
    return {"mailingAddress": DEMO_MAILING_ADDRESS}


REGISTRATION = Registration(MANUAL, demo=_demo)
