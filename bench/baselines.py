"""The ceiling of the stack: a bare Quart-Trio app and a raw ASGI app, served by Hypercorn-trio
with the node's own Hypercorn settings (``hypercorn_config``, a copy of what ``edge.node`` sets),
and the floor of a durable answer on this disk.

Both answer ``GET /`` with a constant JSON object and ``POST /`` by reading the whole body; the
Quart app also parses it as JSON, as the node's handlers do. The ``durable`` app is the raw ASGI
app whose ``POST /`` answers only once the body is committed to an LMDB store opened as the
node opens its own (``open_environment``: both syncs on), in groups as the node's writer commits:
its latency is what any receiver that acknowledges after the disk's sync pays on this machine.

Run: ``python -m bench.baselines quart|asgi|durable URL_FILE`` binds 127.0.0.1 on a free port and
writes ``{"url": ..., "pid": ...}`` to URL_FILE once it listens (the durable app keeps its store
beside URL_FILE); SIGTERM or SIGINT stops it.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
from pathlib import Path
from typing import Any

import lmdb
import trio
from hypercorn.config import Config
from hypercorn.trio import serve
from quart import request
from quart_trio import QuartTrio

from edge.store.lmdb.store import open_environment

# About the size of a node status answer.
CONSTANT = {
    "id": "tx_01JBENCHBENCHBENCHBENCHBENC",
    "kind": "payment",
    "status": "succeeded",
    "version": 3,
    "amount": 19.99,
    "currency": "EUR",
    "isTest": True,
}
CONSTANT_BYTES = json.dumps(CONSTANT, separators=(",", ":")).encode()
RECEIVED_BYTES = b'{"received":true}'


def hypercorn_config(bind: str) -> Config:
    """The Hypercorn settings of ``edge.node._serve``; keep the two in step."""
    config = Config()
    config.bind = [bind]
    config.accesslog = None
    config.errorlog = logging.getLogger("hypercorn.error")
    config.graceful_timeout = 10.0
    config.keep_alive_timeout = 75.0
    return config


def quart_app() -> QuartTrio:
    app = QuartTrio("bench-baseline")

    @app.get("/")
    async def constant() -> Any:
        return CONSTANT

    @app.post("/")
    async def receive() -> Any:
        await request.get_json(force=True)
        return {"received": True}

    return app


async def asgi_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    if scope["type"] != "http":
        return
    payload = CONSTANT_BYTES
    if scope["method"] == "POST":
        more = True
        while more:
            message = await receive()
            more = message.get("more_body", False)
        payload = RECEIVED_BYTES
    await _answer(send, payload)


async def _answer(send: Any, payload: bytes) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})


class GroupCommit:
    """One committer, as the node's writer: what arrives while a commit is under way goes into
    the next one, in a worker thread (one transaction, both of LMDB's syncs)."""

    def __init__(self, env: lmdb.Environment) -> None:
        self._env = env
        self._pending: list[tuple[bytes, trio.Event]] = []
        self._wake = trio.Event()
        self._count = 0

    async def write(self, body: bytes) -> None:
        done = trio.Event()
        self._pending.append((body, done))
        self._wake.set()
        await done.wait()

    async def run(self) -> None:
        limiter = trio.CapacityLimiter(1)
        while True:
            await self._wake.wait()
            self._wake = trio.Event()
            group, self._pending = self._pending, []
            await trio.to_thread.run_sync(self._commit, group, limiter=limiter)
            for _, done in group:
                done.set()

    def _commit(self, group: list[tuple[bytes, trio.Event]]) -> None:
        with self._env.begin(write=True) as txn:
            for body, _ in group:
                self._count += 1
                txn.put(self._count.to_bytes(8, "big"), body)


def durable_app(store: GroupCommit) -> Any:
    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            chunks, more = [], True
            while more:
                message = await receive()
                chunks.append(message.get("body", b""))
                more = message.get("more_body", False)
            await store.write(b"".join(chunks))
            await _answer(send, RECEIVED_BYTES)
            return
        await asgi_app(scope, receive, send)

    return app


async def main(kind: str, url_file: Path) -> None:
    if kind != "durable":
        await serve_until_signalled(quart_app() if kind == "quart" else asgi_app, url_file)
        return
    async with trio.open_nursery() as committer:
        store = GroupCommit(open_environment(url_file.parent / "durable-floor", 2**30))
        committer.start_soon(store.run)
        await serve_until_signalled(durable_app(store), url_file)
        committer.cancel_scope.cancel()


async def serve_until_signalled(app: Any, url_file: Path) -> None:
    stop = trio.Event()
    async with trio.open_nursery() as nursery:

        async def stop_on_signal() -> None:
            with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                async for _ in signals:
                    stop.set()
                    return

        nursery.start_soon(stop_on_signal)
        config = hypercorn_config("127.0.0.1:0")
        binds = await nursery.start(
            lambda task_status: serve(
                app,
                config,
                shutdown_trigger=stop.wait,
                task_status=task_status,
            )
        )
        announcement = json.dumps({"url": binds[0], "pid": os.getpid()}) + "\n"
        await trio.Path(url_file).write_text(announcement)


if __name__ == "__main__":
    logging.basicConfig(level=os.environ.get("EDGE_LOG_LEVEL", "INFO"))
    if len(sys.argv) != 3 or sys.argv[1] not in ("quart", "asgi", "durable"):
        sys.exit("usage: python -m bench.baselines quart|asgi|durable URL_FILE")
    trio.run(main, sys.argv[1], Path(sys.argv[2]))
