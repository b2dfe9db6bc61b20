"""Which of the project's providers are failing its buyers now (``edge.domain.provider_health``),
per provider and mode, in the actor's memory: a failing one is shown ``"available": false`` in
the public info (the button offers the others) until a probe succeeds or a checkout goes through.

Kept in memory only: an outage is the provider's and passes; a node that starts again (or takes
the project over) offers every method until checkouts fail again. A probe is started when the
public info is read and one is due (buyers are looking at the button): the same cheap call that
tries credentials when they are saved (``edge.providers.checking``), in the actor's nursery, its
outcome sent back to the actor as ``ProbeFinished``.
"""

from __future__ import annotations

import logging

import trio

from edge.actors import messages as m
from edge.actors.project.ledger import Ledger, Reply
from edge.actors.registry import ActorRef
from edge.domain.provider_health import Health
from edge.errors import ContractError
from edge.providers import checking
from edge.providers.registry import PROVIDERS

log = logging.getLogger("edge.actors")


class ProviderHealth:
    def __init__(self, ledger: Ledger, ref: ActorRef) -> None:
        self.ledger = ledger
        self.ref = ref
        self._health: dict[tuple[str, str], Health] = {}
        self._probing: set[tuple[str, str]] = set()
        self.version = 0  # moves whenever a provider starts or stops failing

    def failing(self, provider: str, mode: str) -> bool:
        health = self._health.get((provider, mode))
        return health is not None and health.failing

    def failed(self, provider: str, mode: str) -> None:
        """A checkout failed on the provider's side (5xx, no answer, an answer unread)."""
        health = self._health.setdefault((provider, mode), Health())
        if health.failed(trio.current_time()):
            self.version += 1
            self.ledger.ctx.metrics.method_health(provider, mode, failing=True)
            log.warning(
                "project %s: %s %s checkouts keep failing on its side: offered no more until"
                " it answers again",
                self.ledger.project_id,
                provider,
                mode,
            )

    def worked(self, provider: str, mode: str) -> None:
        health = self._health.get((provider, mode))
        if health is not None and health.worked():
            self.version += 1
            self.ledger.ctx.metrics.method_health(provider, mode, failing=False)
            log.warning("project %s: %s %s answers again", self.ledger.project_id, provider, mode)

    def probe_due(self) -> None:
        """Start a probe of every failing provider whose probe is due (none twice at once)."""
        now = trio.current_time()
        for (provider, mode), health in self._health.items():
            if health.probe_due(now) and (provider, mode) not in self._probing:
                self._probing.add((provider, mode))
                self.ledger.ctx.nursery.start_soon(self._probe, provider, mode)

    async def _probe(self, name: str, mode: str) -> None:
        provider = PROVIDERS[name]
        credentials = self.ledger.credentials(provider, mode)
        checked = await checking.check_mode(provider, mode, credentials, self.ledger.ctx.http)
        # refused credentials mean the provider answered: not failing (a set-up error instead)
        answered = checked.result in (checking.OK, checking.REFUSED)
        try:
            await self.ref.send(m.ProbeFinished(name, mode, answered))
        except ContractError:  # the project moved to another node: its own count there
            self._probing.discard((name, mode))

    async def probed(self, msg: m.ProbeFinished, reply: Reply) -> None:
        self._probing.discard((msg.provider, msg.mode))
        if msg.answered:
            self.worked(msg.provider, msg.mode)
        else:
            health = self._health.get((msg.provider, msg.mode))
            if health is not None and health.failing:
                health.probe_failed(trio.current_time())
        reply(None)
