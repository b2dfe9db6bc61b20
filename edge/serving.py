"""Serving HTTP: Hypercorn's trio worker, with the node's own hold on connections (CONTRACT 8).

``hypercorn.trio.run.worker_serve`` builds its listeners itself, so the node serves its bound
sockets here, the same way, through ``CappedListener``: at most ``max_connections`` client
connections at once; one more is accepted and closed at once (refused at accept, rather than
slowing the connections held), and the node accepts again as soon as one closes. The other
limits live where they can be seen: idle keep-alive and slow headers in Hypercorn's idle timer
(``keep_alive_timeout``: a connection whose request has not fully arrived is idle), slow bodies
in the middleware (edge.http.middleware), which alone knows when a body has ended.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

import trio
from hypercorn.config import Config, Sockets
from hypercorn.trio.lifespan import Lifespan
from hypercorn.trio.tcp_server import TCPServer
from hypercorn.trio.worker_context import WorkerContext
from hypercorn.typing import AppWrapper, ConnectionState, LifespanState
from hypercorn.utils import ShutdownError, raise_shutdown, repr_socket_addr

log = logging.getLogger("edge.serving")


class CappedListener(trio.abc.Listener[trio.abc.Stream]):
    """A socket listener that holds at most ``cap`` open connections."""

    def __init__(self, inner: trio.SocketListener, cap: int) -> None:
        self.inner = inner
        self.cap = cap
        self.open = 0
        self.refused = 0

    async def accept(self) -> trio.abc.Stream:
        while True:
            stream = await self.inner.accept()
            if self.open < self.cap:
                self.open += 1
                return _Counted(stream, self)
            self.refused += 1
            if self.refused in (1, 10, 100) or self.refused % 1000 == 0:
                log.warning("at %d client connections: refused %d", self.cap, self.refused)
            await trio.aclose_forcefully(stream)

    async def aclose(self) -> None:
        await self.inner.aclose()

    def closed(self) -> None:
        self.open -= 1


class _Counted(trio.abc.HalfCloseableStream):
    """A client connection that gives its place back when it closes (once)."""

    def __init__(self, stream: trio.SocketStream, listener: CappedListener) -> None:
        self._stream = stream
        self._listener: CappedListener | None = listener
        self.socket = stream.socket  # Hypercorn reads the peer's address here

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        await self._stream.send_all(data)

    async def wait_send_all_might_not_block(self) -> None:
        await self._stream.wait_send_all_might_not_block()

    async def receive_some(self, max_bytes: int | None = None) -> bytes | bytearray:
        return await self._stream.receive_some(max_bytes)

    async def send_eof(self) -> None:
        await self._stream.send_eof()

    async def aclose(self) -> None:
        if self._listener is not None:
            self._listener.closed()
            self._listener = None
        await self._stream.aclose()


async def serve(
    app: AppWrapper,
    config: Config,
    sockets: Sockets,
    shutdown_trigger: Callable[[], Awaitable[None]],
    max_connections: int,
    *,
    task_status: trio.TaskStatus[list[CappedListener]] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve ``app`` on the bound plain-HTTP ``sockets`` until ``shutdown_trigger`` returns,
    as ``worker_serve`` does; then give open requests ``graceful_timeout`` to finish."""
    lifespan_state: LifespanState = {}
    lifespan = Lifespan(app, config, lifespan_state)
    context = WorkerContext(None)
    async with trio.open_nursery() as lifespan_nursery:
        await lifespan_nursery.start(lifespan.handle_lifespan)
        await lifespan.wait_for_startup()
        async with trio.open_nursery() as server_nursery:
            listeners = []
            for sock in sockets.insecure_sockets:
                inner = trio.SocketListener(trio.socket.from_stdlib_socket(sock))
                listeners.append(CappedListener(inner, max_connections))
                bind = repr_socket_addr(sock.family, sock.getsockname())
                await config.log.info(f"Running on http://{bind} (CTRL + C to quit)")
            task_status.started(listeners)
            handler: Any = partial(
                TCPServer, app, config, context, ConnectionState(lifespan_state.copy())
            )
            try:
                async with trio.open_nursery(strict_exception_groups=True) as nursery:
                    nursery.start_soon(raise_shutdown, shutdown_trigger)
                    nursery.start_soon(raise_shutdown, context.terminate.wait)
                    nursery.start_soon(
                        partial(
                            trio.serve_listeners,
                            handler,
                            listeners,
                            handler_nursery=server_nursery,
                        )
                    )
                    await trio.sleep_forever()
            except BaseExceptionGroup as error:
                _, other_errors = error.split((ShutdownError, KeyboardInterrupt))
                if other_errors is not None:
                    raise other_errors from None
            finally:
                await context.terminated.set()
                server_nursery.cancel_scope.deadline = trio.current_time() + config.graceful_timeout
        await lifespan.wait_for_shutdown()
        lifespan_nursery.cancel_scope.cancel()
