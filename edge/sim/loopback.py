"""What every simulator shares: an ASGI app served on loopback until ``stop()``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial

import trio
from hypercorn.config import Config
from hypercorn.trio import serve
from hypercorn.typing import ASGIFramework

from edge.sim.faults import AnswerFaults


class LoopbackServer:
    """Run it in a nursery: ``url = await nursery.start(server.run)``. It stops when ``stop()``
    is called or its nursery is cancelled. ``faults`` loses answers after the request was
    carried out (``edge.sim.faults``), as a real provider's answers are lost."""

    def __init__(self, app: object) -> None:
        self.url = ""
        self.faults = AnswerFaults()
        self._served = self.faults.wrap(app)  # type: ignore[arg-type]
        self._stop = trio.Event()

    async def run(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Serve until ``stop()``; reports the base URL (``http://127.0.0.1:PORT``)."""
        self._stop = trio.Event()
        config = Config()
        config.bind = [f"{host}:{port}"]
        config.accesslog = None
        config.graceful_timeout = 1.0
        app: ASGIFramework = self._served  # type: ignore[assignment]
        async with trio.open_nursery() as nursery:
            binds = await nursery.start(
                partial(serve, app, config, shutdown_trigger=self._stop.wait)
            )
            self.url = binds[0]
            task_status.started(self.url)

    def stop(self) -> None:
        self._stop.set()

    @asynccontextmanager
    async def serving(self) -> AsyncIterator[str]:
        """Serve for the block (its value: the base URL); at its end, stopped at once: a client
        still holding a kept-alive connection (the node) is not waited for."""
        async with trio.open_nursery() as nursery:
            url: str = await nursery.start(self.run)
            try:
                yield url
            finally:
                self.stop()
                nursery.cancel_scope.cancel()
