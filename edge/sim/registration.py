"""What a provider registers beside its adapter for simulation (``edge.sim.registry``): its
simulator, what ``edge trigger`` can send for it and how ``edge serve --demo`` wires it.

The node's own registry (``edge.providers.registry``) holds adapters only, so a node that never
simulates loads nothing of ``edge.sim``; each provider's simulator package makes its own
``Registration`` (``edge.sim.stripe.registration`` ...), and ``edge.sim.registry`` lists them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import trio

from edge.providers.base import Provider
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
