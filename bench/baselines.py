"""The ceiling of the stack: a bare Quart-Trio app and a raw ASGI app, served by Hypercorn-trio
with the node's own Hypercorn settings (``hypercorn_config``, a copy of what ``edge.node`` sets),
and the floor of a durable answer on this disk.

Both answer ``GET /`` with a constant JSON object and ``POST /`` by reading the whole body; the
Quart app also parses it as JSON, as the node's handlers do. The ``durable`` app is the raw ASGI
app whose ``POST /`` answers only once the body is committed by the node's own writer and store
(``open_writer`` on ``open_store``: group commit, both of LMDB's syncs): its latency is what the
node's own store pays on this machine. The ``flush`` app is the least any receiver that
acknowledges after its disk can pay: the bodies waiting at that moment written in one write to a
file written through once (so an overwrite changes no metadata), one ``fdatasync``, then every
one of them answered: one flush a group, as a write-ahead log's commit.

Run: ``python -m bench.baselines quart|asgi|durable|flush URL_FILE`` binds 127.0.0.1 on a free
port and writes ``{"url": ..., "pid": ...}`` to URL_FILE once it listens (the durable and flush
apps keep their files beside URL_FILE); SIGTERM or SIGINT stops it.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import signal
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import trio
from hypercorn.config import Config
from hypercorn.trio import serve
from quart import request
from quart_trio import QuartTrio

from edge.store.lmdb.store import open_store
from edge.store.writer import StoreWriter, open_writer

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


def keeping_app(keep: Callable[[bytes], Awaitable[None]]) -> Any:
    """The raw ASGI app whose ``POST /`` answers once ``keep(body)`` returns."""

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            chunks, more = [], True
            while more:
                message = await receive()
                chunks.append(message.get("body", b""))
                more = message.get("more_body", False)
            await keep(b"".join(chunks))
            await _answer(send, RECEIVED_BYTES)
            return
        await asgi_app(scope, receive, send)

    return app


def durable_app(writer: StoreWriter) -> Any:
    written = itertools.count()

    async def commit(body: bytes) -> None:
        await writer.write([("records", next(written).to_bytes(8, "big"), body)])

    return keeping_app(commit)


FLUSH_FILE_BYTES = 64 * 2**20


class OneFlush:
    """Group commit with one flush a group: ``write`` returns once its bytes are on the disk."""

    def __init__(self, path: Path) -> None:
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
        os.pwrite(self._fd, bytes(FLUSH_FILE_BYTES), 0)  # placed now: no allocation later
        os.fsync(self._fd)
        self._offset = 0
        self._waiting: list[tuple[bytes, trio.Event]] = []
        self._wake = trio.Event()

    def _flush(self, data: bytes) -> None:
        if self._offset + len(data) > FLUSH_FILE_BYTES:
            self._offset = 0
        os.pwrite(self._fd, data, self._offset)
        os.fdatasync(self._fd)
        self._offset += len(data)

    async def write(self, data: bytes) -> None:
        done = trio.Event()
        self._waiting.append((data, done))
        self._wake.set()
        await done.wait()

    async def run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake = trio.Event()
            group, self._waiting = self._waiting, []
            await trio.to_thread.run_sync(self._flush, b"".join(data for data, _ in group))
            for _, done in group:
                done.set()


async def main(kind: str, url_file: Path) -> None:
    if kind == "flush":
        flush = OneFlush(url_file.parent / "flush-floor.bin")
        async with trio.open_nursery() as nursery:
            nursery.start_soon(flush.run)
            await serve_until_signalled(keeping_app(flush.write), url_file)
            nursery.cancel_scope.cancel()
        return
    if kind != "durable":
        await serve_until_signalled(quart_app() if kind == "quart" else asgi_app, url_file)
        return
    with open_store(url_file.parent / "durable-floor", 2**30) as store:
        async with open_writer(store) as writer:
            await serve_until_signalled(durable_app(writer), url_file)


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
    if len(sys.argv) != 3 or sys.argv[1] not in ("quart", "asgi", "durable", "flush"):
        sys.exit("usage: python -m bench.baselines quart|asgi|durable|flush URL_FILE")
    trio.run(main, sys.argv[1], Path(sys.argv[2]))
