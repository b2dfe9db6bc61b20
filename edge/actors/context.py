"""What the node's parts share: the store and its writer, the actor registry, the secret sealer,
the public-info signer, settings, the HTTP client for provider calls, the API key index, where
the node listens, and the way to the simulators for ``edge trigger``.

Complete when constructed: ``open_node`` opens every piece first (store, writer, registry, the
listening socket) and only then builds the context.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import httpx
import trio

from edge.activity import ActivityLog
from edge.actors.followups import AttemptWatch
from edge.actors.hashing import HashingPool
from edge.actors.keyindex import KeyIndex
from edge.actors.ownership import OneNode, Ownership
from edge.actors.rates import ProjectRates
from edge.actors.registry import ActorRegistry
from edge.actors.sync import Syncer

if TYPE_CHECKING:
    from edge.actors.notifier import Notifier
from edge.config import Settings
from edge.domain.events import Simulated
from edge.domain.ids import wall_clock_ms
from edge.domain.stalls import Stalls
from edge.errors import Conflict
from edge.mailer import Mailer
from edge.metrics import Metrics
from edge.sealing import Sealer
from edge.signing import Signer
from edge.store.engine import Engine
from edge.store.writer import StoreWriter

wall_ms = wall_clock_ms  # the machine's clock, ms


# ``edge trigger``: (a client for the node's own address, what to simulate) -> what the node
# answered the signed, simulated delivery. The secrets it signs with stay in the node: the
# answer carries none.
SendSimulated = Callable[[httpx.AsyncClient, Simulated], Awaitable[dict[str, Any]]]


async def no_simulators(http: httpx.AsyncClient, ask: Simulated) -> dict[str, Any]:
    """A context made without the composition root's simulators (tests of one part)."""
    raise Conflict("not_simulated", "This node was started without its simulators.")


class Load:
    """How many requests the node has begun lately, kept by the HTTP front: background work that
    can wait (notifications) gives way while the node is busy. A rate, not requests in flight:
    long polls parked for 25 s are not load."""

    WINDOW_S = 0.1
    BUSY = 20  # requests begun in a window: 200 a second

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._window = clock()
        self._count = self._last = 0

    def begun(self) -> None:
        self._roll()
        self._count += 1

    def busy(self) -> bool:
        self._roll()
        return max(self._count, self._last) >= self.BUSY

    def _roll(self) -> None:
        now = self._clock()
        if now - self._window >= self.WINDOW_S:
            # the window just ended becomes the last; an idle stretch leaves nothing behind
            self._last = self._count if now - self._window < 2 * self.WINDOW_S else 0
            self._count, self._window = 0, now


@dataclass
class NodeContext:
    settings: Settings
    store: Engine
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
    # Wake the follow-up worker, the notifier, once a commit that owes them work has landed.
    follow_ups_owed: Callable[[], None] = lambda: None
    notifications_owed: Callable[[], None] = lambda: None
    # the follow-up worker's attempts, as they are recorded (the buyer's return waits on one)
    attempts: AttemptWatch = field(default_factory=AttemptWatch)
    load: Load = field(default_factory=Load)
    metrics: Metrics = field(default_factory=Metrics)
    # the last requests and notification attempts, for edge logs --follow
    activity: ActivityLog = field(default_factory=lambda: ActivityLog(wall_ms))
    # one change of an account at a time: an e-mail is checked free and taken in one step, a
    # one-time code or token is checked unused and spent in one step
    accounts_lock: trio.Lock = field(default_factory=trio.Lock)
    hashing: HashingPool = field(default_factory=HashingPool)  # passwords: bounded, off the loop
    mailer: Mailer | None = None  # EDGE_SMTP_URL: where reset links are e-mailed
    # the simulators' signed deliveries, which the composition root (edge.node) loads on the
    # first trigger: the HTTP layer never imports edge.sim, and a node that never triggers
    # loads none of it
    send_simulated: SendSimulated = no_simulators
    # which projects this node serves: all (one node), or those it holds the lease of (cluster)
    ownership: Ownership = field(default_factory=OneNode)
    # asks providers what became of payments (sync, reconcile); None in a bare context
    syncer: Syncer | None = None
    notifier: Notifier | None = None  # its test send (the dashboard's Send a test event)
    # the node's own pauses (edge.domain.stalls): deadlines on clients never count them
    stalls: Stalls | None = None

    @property
    def nursery(self) -> trio.Nursery:
        """Where actors run work that must not hold them up (provider calls, timers)."""
        return self.registry.nursery
