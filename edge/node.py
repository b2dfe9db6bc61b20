"""``run_node``: the whole node in one nursery.

Start-up order is store -> writer -> actors -> HTTP; shutdown runs the other way: HTTP stops
taking requests and lets in-flight ones finish, actors drain their mailboxes, the writer commits
what it holds, and the store closes last. Nothing reads the whole store at start, so start-up
time does not grow with the data.
"""

from __future__ import annotations

import json
import logging
import os
import signal
from dataclasses import dataclass
from pathlib import Path

import httpx
import trio
from hypercorn.config import Config
from hypercorn.trio import serve

from edge.actors.context import NodeContext
from edge.actors.project import ProjectActor
from edge.actors.rates import ProjectRates
from edge.actors.registry import ActorRegistry
from edge.config import NODE_FILE, Settings
from edge.http import button
from edge.http.app import asgi_app
from edge.sealing import Sealer
from edge.signing import Signer
from edge.store.env import open_store
from edge.store.writer import StoreWriter

log = logging.getLogger("edge.node")

STORE_DIR = "store"


@dataclass
class RunningNode:
    """Handed to ``task_status.started()``: where the node listens, and a way to stop it."""

    url: str
    ctx: NodeContext
    stop: trio.Event


def store_path(settings: Settings) -> Path:
    return settings.data_dir / STORE_DIR


async def run_node(
    settings: Settings,
    *,
    handle_signals: bool = False,
    task_status: trio.TaskStatus[RunningNode] = trio.TASK_STATUS_IGNORED,
) -> None:
    stop = trio.Event()
    with open_store(store_path(settings), settings.map_size) as store:
        writer = StoreWriter(store)
        async with trio.open_nursery() as core:
            await core.start(writer.run)
            try:
                async with httpx.AsyncClient(timeout=httpx.Timeout(15.0)) as http:
                    await _serve(settings, store, writer, http, stop, handle_signals, task_status)
            finally:
                writer.close()  # commits everything already submitted, then returns
    log.info("node stopped; store closed")


async def _serve(settings, store, writer, http, stop, handle_signals, task_status) -> None:  # type: ignore[no-untyped-def]
    async with trio.open_nursery() as actors_nursery:
        ctx = NodeContext(
            settings=settings,
            store=store,
            writer=writer,
            sealer=Sealer(settings.secret_key),
            signer=Signer.load(settings.data_dir),
            http=http,
            nursery=actors_nursery,
            public_url=settings.public_url or "",
        )
        registry = ActorRegistry(
            lambda project_id: ProjectActor.load(ctx, project_id),
            actors_nursery,
            mailbox_size=settings.mailbox_size,
            idle_s=settings.actor_idle_s,
        )
        ctx.registry = registry
        ctx.manage_rates = ProjectRates(settings, tier="")
        button.script_bytes(ctx.signer)  # no packaged script: the start fails, not a buyer
        app = asgi_app(ctx)
        config = Config()
        config.bind = [f"{settings.host}:{settings.port}"]
        config.accesslog = None
        config.errorlog = logging.getLogger("hypercorn.error")
        config.graceful_timeout = 10.0
        config.keep_alive_timeout = 75.0
        if handle_signals:
            actors_nursery.start_soon(_stop_on_signal, stop)
        async with trio.open_nursery() as http_nursery:

            async def shutdown_trigger() -> None:
                await stop.wait()
                registry.stop_waiting()

            binds = await http_nursery.start(
                lambda task_status: serve(
                    app, config, shutdown_trigger=shutdown_trigger, task_status=task_status
                )
            )
            url = _base_url(binds[0])
            ctx.bound_url = url
            if not ctx.public_url:
                ctx.public_url = url
            _write_node_file(settings, url)
            log.info("edge node listening on %s (data %s)", url, settings.data_dir)
            task_status.started(RunningNode(url=url, ctx=ctx, stop=stop))
        # HTTP has stopped and in-flight requests are done: now drain the actors.
        await registry.drain()
        _remove_node_file(settings)
        actors_nursery.cancel_scope.cancel()


def _base_url(bind: str) -> str:
    # hypercorn reports "http://127.0.0.1:PORT"
    return bind if bind.startswith("http") else f"http://{bind}"


async def _stop_on_signal(stop: trio.Event) -> None:
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for signum in signals:
            log.info("signal %s: draining", signal.Signals(signum).name)
            stop.set()
            return


def _write_node_file(settings: Settings, url: str) -> None:
    path = settings.data_dir / NODE_FILE
    path.write_text(json.dumps({"url": url, "pid": os.getpid()}) + "\n")


def _remove_node_file(settings: Settings) -> None:
    try:
        (settings.data_dir / NODE_FILE).unlink()
    except FileNotFoundError:
        pass
