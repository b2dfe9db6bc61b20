"""What the node's parts share: the store and its writer, the actor registry, the secret sealer,
the public-info signer, settings, the HTTP client for provider calls, the API key index, and
where the node listens.

Complete when constructed: ``open_node`` opens every piece first (store, writer, registry, the
listening socket) and only then builds the context.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import httpx
import trio

from edge.actors.keyindex import KeyIndex
from edge.actors.rates import ProjectRates
from edge.actors.registry import ActorRegistry
from edge.config import Settings
from edge.sealing import Sealer
from edge.signing import Signer
from edge.store.env import Store
from edge.store.writer import StoreWriter


def wall_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass
class NodeContext:
    settings: Settings
    store: Store
    writer: StoreWriter
    registry: ActorRegistry
    sealer: Sealer
    signer: Signer
    http: httpx.AsyncClient
    keys: KeyIndex
    manage_rates: ProjectRates  # the operator token's bucket (not per project)
    bound_url: str  # where this node listens
    public_url: str  # where buyers reach it: bound_url, or a proxy's address
    clock_ms: Callable[[], int] = wall_ms
    # Wakes the follow-up worker once a commit that owes the outside world something has landed.
    follow_ups_owed: Callable[[], None] = lambda: None

    @property
    def nursery(self) -> trio.Nursery:
        """Where actors run work that must not hold them up (provider calls, timers)."""
        return self.registry.nursery
