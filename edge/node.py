"""``open_node``: the whole node, each piece opened in turn and closed in reverse.

Start-up order is store -> writer -> actors (registry) -> HTTP; shutdown runs the other way:
HTTP stops taking requests and lets in-flight ones finish, actors drain, the writer commits what
it holds, and the store closes last. Nothing reads the whole store at start, so start-up time
does not grow with the data.
"""

from __future__ import annotations

import json
import logging
import math
import os
import signal
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from contextlib import asynccontextmanager, closing, contextmanager, suppress
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import trio
from hypercorn.config import Config, Sockets
from hypercorn.utils import repr_socket_addr, wrap_app

from edge import dashboard, datadir, loop_steps
from edge.activity import ActivityLog
from edge.actors import messages as m
from edge.actors.context import Load, NodeContext, wall_ms
from edge.actors.followups import AttemptWatch, FollowUpWorker
from edge.actors.hashing import HashingPool
from edge.actors.keyindex import KeyIndex
from edge.actors.notifier import Notifier
from edge.actors.notify_targets import StoredTargets
from edge.actors.ownership import Leased, OneNode, Ownership
from edge.actors.pacing import ProviderPacing
from edge.actors.project import ProjectActor
from edge.actors.queue_pruner import prune_queues
from edge.actors.rates import ProjectRates
from edge.actors.registry import Actor, ActorRef, ActorRegistry, open_registry
from edge.actors.sync import Syncer
from edge.config import NODE_FILE, ConfigError, Settings
from edge.domain import ids, notifications, smtp
from edge.domain.egress import unreachable_reason
from edge.domain.events import Simulated
from edge.domain.stalls import Stalls
from edge.errors import Unavailable
from edge.http import button
from edge.http.app import asgi_app
from edge.mailer import Mailer
from edge.metrics import Metrics
from edge.providers.base import FollowUpResult, ProviderRefund
from edge.providers.egress import provider_client
from edge.providers.registry import PROVIDERS
from edge.sealing import Sealer
from edge.serving import ConnectionLimits, serve
from edge.signing import Signer
from edge.store import notifyq, outbox, sealcheck, signcheck
from edge.store.engine import Engine
from edge.store.lmdb.store import STORE_DIR, open_store
from edge.store.postgres.leases import Clock, Leases
from edge.store.writer import StoreWriter, open_writer

log = logging.getLogger("edge.node")

RESOLVE_TIMEOUT_S = 10.0
DEPTH_COUNTED = 100_000
# An idle keep-alive connection is closed after this long (CONTRACT 8): idle sockets are cheap
# to reopen and dear to hold by the thousand.
KEEP_ALIVE_S = 5.0


@dataclass
class RunningNode:
    """What ``open_node`` yields: where the node listens, its context, and a way to stop it."""

    url: str
    ctx: NodeContext
    stop: trio.Event


def store_path(settings: Settings) -> Path:
    return settings.data_dir / STORE_DIR


@asynccontextmanager
async def open_node(
    settings: Settings, *, handle_signals: bool = False, wall_ms: Clock = wall_ms
) -> AsyncIterator[RunningNode]:
    """A serving node. It stops when ``stop`` is set (or on SIGINT/SIGTERM with
    ``handle_signals``), or when the ``async with`` body ends; leaving the block waits for the
    shutdown to finish. ``wall_ms``: the machine's clock (a test gives one that is off)."""
    with datadir.locked(settings.data_dir):
        async with _open_node(settings, handle_signals, wall_ms) as running:
            yield running


@asynccontextmanager
async def _open_node(
    settings: Settings, handle_signals: bool, wall_ms: Clock
) -> AsyncIterator[RunningNode]:
    signer = Signer.load(settings.data_dir, settings.signing_key)
    button.script_bytes(signer)  # no packaged script: the start fails, not a buyer
    stop = trio.Event()
    async with _open_engine(settings, wall_ms) as (store, ownership), open_writer(store) as writer:
        clock_ms = _agreed_clock(ownership, wall_ms)
        if ownership.shared:
            ids.new_ulid.follow(clock_ms)
        await sealcheck.check(store, writer, Sealer(settings.secret_key))
        if ownership.shared:  # only nodes that share a store must share a key
            await signcheck.check(store, writer, signer.kid)
        pacing = ProviderPacing(settings.sync_rate)
        async with (
            _leases_kept(ownership) as beating,
            provider_client(
                settings.provider_hosts_allow,
                timeout_s=settings.provider_timeout_s,
                on_request=pacing.hook,
                only=settings.provider_hosts_only,
            ) as http,
            # CONTRACT 4.8: http://localhost is always an endpoint the node may notify
            provider_client(
                settings.notify_allow | {"localhost"}, timeout_s=notifications.TIMEOUT_S
            ) as notify_http,
        ):
            ctx: NodeContext

            async def spawn(project_id: str, ref: ActorRef) -> Actor:
                return await ProjectActor.load(ctx, project_id, ref)  # once ctx exists

            async with open_registry(
                spawn,
                mailbox_size=settings.mailbox_size,
                idle_s=settings.actor_idle_s,
                held=partial(_serves, ownership),
            ) as registry:
                attempts = AttemptWatch()
                stalls = Stalls(trio.current_time())
                load, metrics, activity = Load(), Metrics(), ActivityLog(clock_ms)
                syncer = Syncer(
                    partial(registry.call, timeout_s=RESOLVE_TIMEOUT_S),
                    http,
                    pacing,
                    metrics,
                    clock_ms,
                    settings.sync_every_s,
                )
                follow_ups = FollowUpWorker(
                    store,
                    writer,
                    _Projects(registry, syncer),
                    http,
                    PROVIDERS,
                    clock_ms,
                    attempts,
                    mine=ownership.claim,
                )
                targets = StoredTargets(store, Sealer(settings.secret_key))
                notifier = Notifier(
                    store,
                    writer,
                    targets,
                    partial(registry.call, timeout_s=RESOLVE_TIMEOUT_S),
                    notify_http,
                    clock_ms,
                    busy=load.busy,
                    counted=metrics.notification,
                    observed=activity.notification,
                    mine=ownership.claim,
                    endpoints=targets.endpoint,
                    shared=ownership.shared,
                )
                metrics.watch(_scraped(store, writer, registry))
                config = _hypercorn_config(settings)
                with (
                    _listening(config) as (sockets, url),
                    closing(
                        HashingPool(settings.hashing_workers, settings.hashing_waiting)
                    ) as hashing,
                ):
                    ctx = NodeContext(
                        settings=settings,
                        clock_ms=clock_ms,
                        store=store,
                        writer=writer,
                        registry=registry,
                        sealer=Sealer(settings.secret_key),
                        signer=signer,
                        http=http,
                        keys=KeyIndex(store, shared=ownership.shared),
                        manage_rates=ProjectRates(settings, tier=""),
                        bound_url=url,
                        public_url=settings.public_url or url,
                        follow_ups_owed=follow_ups.notify,
                        notifications_owed=notifier.notify,
                        attempts=attempts,
                        load=load,
                        metrics=metrics,
                        activity=activity,
                        hashing=hashing,
                        mailer=_mailer(settings, settings.public_url or url),
                        send_simulated=_send_simulated,
                        ownership=ownership,
                        syncer=syncer,
                        notifier=notifier,
                        stalls=stalls,
                    )

                    async def shutdown_trigger() -> None:
                        await stop.wait()
                        registry.stop_waiting()

                    await beating.start(
                        partial(ownership.run, gone=_both(follow_ups.notify, notifier.notify)),
                        url,
                        registry.forget,
                        registry.quiet,
                        registry.let_go,
                    )
                    async with trio.open_nursery() as owed:
                        await owed.start(follow_ups.run)  # resumes what a last run left
                        await owed.start(notifier.run)
                        await owed.start(prune_queues, store, writer, clock_ms)
                        async with trio.open_nursery() as serving:
                            if handle_signals:
                                serving.start_soon(_stop_on_signal, stop)
                            await serving.start(
                                serve,
                                wrap_app(
                                    asgi_app(ctx, dashboard.PAGES), config.wsgi_max_body_size, None
                                ),
                                config,
                                sockets,
                                shutdown_trigger,
                                ConnectionLimits(
                                    settings.max_connections,
                                    KEEP_ALIVE_S,
                                    settings.header_timeout_s,
                                ),
                                stalls,
                                metrics.loop_lag,
                            )
                            loop_steps.quiet_collector()
                            _write_node_file(settings, url)
                            public = settings.public_url or url
                            log.info(
                                "edge node listening on %s (data %s); open %s/ to sign up",
                                url,
                                settings.data_dir,
                                public,
                            )
                            unreachable = unreachable_reason(public)
                            if unreachable:
                                log.warning("providers cannot send webhooks: %s", unreachable)
                            long_step_s = settings.long_step_ms and settings.long_step_ms / 1000
                            try:
                                with loop_steps.watched(
                                    long_step_s, metrics.long_step, metrics.gc_pause
                                ):
                                    yield RunningNode(url=url, ctx=ctx, stop=stop)
                            finally:
                                stop.set()
                        # an attempt cut short here stays pending: the next start repeats it
                        owed.cancel_scope.cancel()
                # HTTP has stopped and in-flight requests are done: the registry drains next.
            _remove_node_file(settings)
    log.info("node stopped; store closed")


@asynccontextmanager
async def _open_engine(
    settings: Settings, wall_ms: Clock
) -> AsyncIterator[tuple[Engine, Ownership]]:
    """The store and who owns its projects: LMDB in the data dir, every project this node's;
    or with ``EDGE_STORE`` PostgreSQL, fenced by this node's leases (cluster mode)."""
    if settings.store_url is None:
        with open_store(store_path(settings), settings.map_size) as store:
            yield store, OneNode()
        return
    try:  # the cluster extra (psycopg): loaded only by a node that asks for PostgreSQL
        from edge.store.postgres.store import open_postgres_store
    except ImportError as exc:
        raise ConfigError(
            f"EDGE_STORE needs psycopg, the cluster extra ({exc}): pip install 'edge[cluster]'"
            " (and libpq5), or unset EDGE_STORE for the embedded store"
        ) from None

    from edge.store.postgres.notices import Notices

    async with open_postgres_store(settings.store_url) as pg:
        leases = Leases(pg.pool, settings.node_id, "", lease_s=settings.lease_s, wall_ms=wall_ms)
        pg.fence = leases
        log.info("cluster mode: node %s on PostgreSQL", settings.node_id)
        yield pg, Leased(leases, notices=Notices(pg.pool))


def _agreed_clock(ownership: Ownership, wall_ms: Clock) -> Clock:
    """The time the node stamps and compares by (milliseconds): its wall clock on its own
    store; in cluster mode PostgreSQL's (``Ownership.clock_ms``), so an entry's hold taken on
    one node is read alike on another whose clock is off."""
    return ownership.clock_ms if ownership.shared else wall_ms


@asynccontextmanager
async def _leases_kept(ownership: Ownership) -> AsyncIterator[trio.Nursery]:
    """Where ownership is kept (``Ownership.run``: the heartbeat, in cluster mode), from the
    node's start until its actors have drained (leases must not lapse under work still
    finishing); then everything owned is released, so the next node takes the projects up at
    once instead of after ``LEASE_S``."""
    async with trio.open_nursery() as nursery:
        try:
            yield nursery
        finally:
            nursery.cancel_scope.cancel()
    with trio.move_on_after(RESOLVE_TIMEOUT_S) as scope:
        scope.shield = True
        try:
            await ownership.release_all()
        except Unavailable:
            log.warning("cluster: could not release the leases; they lapse on their own")


def _serves(ownership: Ownership, project_id: str, actor: Actor | None) -> bool:
    """The actor still serves its project here: at the epoch it was made under (no actor:
    the project is this node's now, at whatever epoch)."""
    if actor is None:
        return ownership.held(project_id)
    return isinstance(actor, ProjectActor) and ownership.held(project_id, actor.epoch)


async def run_node(
    settings: Settings,
    *,
    handle_signals: bool = False,
    wall_ms: Clock = wall_ms,
    task_status: trio.TaskStatus[RunningNode] = trio.TASK_STATUS_IGNORED,
) -> None:
    """``open_node`` as a task: reports the running node, returns once it has stopped."""
    async with open_node(settings, handle_signals=handle_signals, wall_ms=wall_ms) as running:
        task_status.started(running)
        await running.stop.wait()


def _scraped(
    store: Engine, writer: StoreWriter, registry: ActorRegistry
) -> Callable[[], Awaitable[dict[str, Any]]]:
    """What /metrics reads when scraped."""

    async def read() -> dict[str, Any]:
        stats = writer.stats
        return {
            "commits": stats.commits,
            "tickets": stats.tickets,
            "perCommit": stats.tickets_per_commit(),
            "engineSeconds": stats.engine_s,
            "roundTripSeconds": stats.round_trip_s,
            "actors": len(registry),
            "followUps": await _depth(store, outbox.DB),
            "notifications": await notifyq.depth(store, DEPTH_COUNTED),
        }

    return read


async def _depth(store: Engine, db: str) -> int:
    """Pending entries of a queue, counted up to ``DEPTH_COUNTED``."""
    return len(await store.scan(outbox.QUEUE, db=db, limit=DEPTH_COUNTED))


def _both(*wake: Callable[[], None]) -> Callable[[], None]:
    def woken() -> None:
        for one in wake:
            one()

    return woken


class _Projects:
    """The follow-up worker's way to the project actors (``followups.Projects``)."""

    def __init__(self, registry: ActorRegistry, syncer: Syncer) -> None:
        self._registry = registry
        self._syncer = syncer

    async def look(self, project_id: str, tx_id: str) -> tuple[str, int | None]:
        return await self._syncer.owed(project_id, tx_id)

    async def walk(
        self, project_id: str, provider: str, mode: str, since_ms: int
    ) -> tuple[int, int | None, str]:
        return await self._syncer.walk(project_id, provider, mode, since_ms)

    async def target(
        self, project_id: str, tx_id: str, mode: str, action: str
    ) -> Mapping[str, Any] | None:
        target: Mapping[str, Any] | None = await self._registry.call(
            project_id, m.FollowUpTarget(tx_id, mode, action), RESOLVE_TIMEOUT_S
        )
        return target

    async def report(
        self, project_id: str, provider: str, mode: str, result: FollowUpResult
    ) -> None:
        message = m.FollowUpReported(provider, mode, result.events, result.body)
        await self._registry.call(project_id, message, RESOLVE_TIMEOUT_S)

    async def expire(self, project_id: str, tx_id: str, *, unanswered: bool = False) -> str:
        if not unanswered:  # (one never answered has nothing at its provider to ask about)
            # a buyer who approved in the last minutes, whose webhook was lost and who never
            # came back, paid (PayPal's approved order is then captured): never expired for it
            await self._syncer.before_expiry(project_id, tx_id)
        said: str = await self._registry.call(
            project_id, m.ExpireCheckout(tx_id, unanswered), RESOLVE_TIMEOUT_S
        )
        return said

    async def refund_outcome(
        self,
        project_id: str,
        tx_id: str,
        refund_id: str,
        outcome: str,
        refund: ProviderRefund | None,
        detail: str,
    ) -> None:
        message = m.RefundOutcome(tx_id, refund_id, outcome, refund, detail)
        await self._registry.call(project_id, message, RESOLVE_TIMEOUT_S)


async def _send_simulated(http: httpx.AsyncClient, ask: Simulated) -> dict[str, Any]:
    """``edge trigger``'s way to the simulators' event builders and signers: imported on the
    first trigger, so a node that never triggers loads none of ``edge.sim``."""
    from edge.sim.registry import send_simulated

    return await send_simulated(http, ask)


def _mailer(settings: Settings, public_url: str) -> Mailer | None:
    if settings.smtp_url is None:
        return None
    host = urlsplit(public_url).hostname or "localhost"
    return Mailer(smtp.parse(settings.smtp_url), settings.smtp_from or f"edge <no-reply@{host}>")


def _hypercorn_config(settings: Settings) -> Config:
    config = Config()
    config.bind = [f"{settings.host}:{settings.port}"]
    config.accesslog = None
    config.errorlog = logging.getLogger("hypercorn.error")
    config.graceful_timeout = 10.0
    # idle connections and slow headers are cut by the node's own clock (edge.serving);
    # Hypercorn's idle timer, which runs on whatever bytes come, closes idle ones at shutdown
    config.keep_alive_timeout = math.inf
    return config


@contextmanager
def _listening(config: Config) -> Iterator[tuple[Sockets, str]]:
    """Bind now, so the node knows its address (port 0: the real port) before it is built;
    the sockets are closed on exit, whether or not serving ever started."""
    sockets = config.create_sockets()
    try:
        for sock in sockets.insecure_sockets:
            sock.listen(config.backlog)
        first = sockets.insecure_sockets[0]
        yield sockets, f"http://{repr_socket_addr(first.family, first.getsockname())}"
    finally:
        for sock in sockets.insecure_sockets:
            sock.close()


async def _stop_on_signal(stop: trio.Event) -> None:
    """Set ``stop`` on SIGINT or SIGTERM; return once it is set, by a signal or otherwise."""
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with trio.open_nursery() as watching:

            async def first_signal() -> None:
                async for signum in signals:
                    log.info("signal %s: draining", signal.Signals(signum).name)
                    stop.set()
                    return

            watching.start_soon(first_signal)
            await stop.wait()
            watching.cancel_scope.cancel()


def _write_node_file(settings: Settings, url: str) -> None:
    path = settings.data_dir / NODE_FILE
    # publicUrl: where buyers' browsers reach the node (EDGE_PUBLIC_URL behind a proxy), which
    # ``edge button`` puts in the snippet
    public = settings.public_url or url
    datadir.write_private(
        path, json.dumps({"url": url, "publicUrl": public, "pid": os.getpid()}) + "\n"
    )


def _remove_node_file(settings: Settings) -> None:
    with suppress(FileNotFoundError):
        (settings.data_dir / NODE_FILE).unlink()
