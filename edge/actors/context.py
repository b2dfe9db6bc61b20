"""What every project actor shares: the store and its writer, the secret sealer, the public-info
signer, settings, the HTTP client for provider calls, and a nursery for work that must not block
an actor."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import httpx
import trio

from edge.actors.keyindex import KeyIndex
from edge.config import Settings
from edge.sealing import Sealer
from edge.signing import Signer
from edge.store.env import Store
from edge.store.writer import StoreWriter

if TYPE_CHECKING:
    from edge.actors.rates import ProjectRates
    from edge.actors.registry import ActorRegistry


def wall_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass
class NodeContext:
    settings: Settings
    store: Store
    writer: StoreWriter
    sealer: Sealer
    signer: Signer
    http: httpx.AsyncClient
    nursery: trio.Nursery
    public_url: str
    bound_url: str = ""  # where this node listens; public_url may be a proxy's address
    clock_ms: Callable[[], int] = wall_ms
    registry: ActorRegistry | None = None
    manage_rates: ProjectRates | None = None  # the operator token's bucket (not per project)
    keys: KeyIndex = field(init=False)

    def __post_init__(self) -> None:
        self.keys = KeyIndex(self.store)
