"""Liveness and readiness (CONTRACT 4.9), for load balancers and orchestrators.

``GET /healthz``: the process answers. ``GET /readyz``: the store is open and the writer
commits: a probe write (one key of the ``meta`` database) must become durable within
``PROBE_TIMEOUT_S``. Probes are shared: callers during a probe wait for that one, and a result
stands for ``PROBE_FRESH_S``, so an unauthenticated caller cannot turn readiness checks into
commit load.
"""

from __future__ import annotations

import struct

import trio

from edge.actors.context import NodeContext
from edge.errors import unavailable
from edge.http.asgi import Receive, Scope, Send, answer
from edge.http.errors import method_not_allowed
from edge.http.jsonio import dumps

HEALTH = "/healthz"
READY = "/readyz"
PROBE_KEY = b"ready-probe"
PROBE_TIMEOUT_S = 5.0
PROBE_FRESH_S = 1.0
_NO_STORE = [(b"cache-control", b"no-store")]
_ALLOW = "GET, HEAD"


class HealthRoutes:
    def __init__(self, ctx: NodeContext) -> None:
        self.ctx = ctx
        self._probe: trio.Event | None = None  # set when the probe under way ends
        self._ready = False
        self._checked_at = -PROBE_FRESH_S

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["method"] not in ("GET", "HEAD"):
            raise method_not_allowed(_ALLOW)
        head = scope["method"] == "HEAD"
        if scope["path"] == HEALTH:
            await answer(send, 200, dumps({"status": "ok"}), _NO_STORE, head=head)
            return
        if not await self.ready():
            raise unavailable("The store does not commit: the node is not ready.")
        await answer(send, 200, dumps({"status": "ready"}), _NO_STORE, head=head)

    async def ready(self) -> bool:
        if trio.current_time() - self._checked_at < PROBE_FRESH_S:
            return self._ready
        if self._probe is not None:
            await self._probe.wait()
            return self._ready
        self._probe = done = trio.Event()
        try:
            self._ready = await self._commits()
            self._checked_at = trio.current_time()
        finally:
            self._probe = None
            done.set()
        return self._ready

    async def _commits(self) -> bool:
        op = ("meta", PROBE_KEY, struct.pack(">Q", self.ctx.clock_ms()))
        with trio.move_on_after(PROBE_TIMEOUT_S):
            try:
                await self.ctx.writer.write([op])
            except Exception:  # the store refused the write: not ready, and say so
                return False
            return True
        return False
