"""Liveness and readiness (CONTRACT 4.9), for load balancers and orchestrators, and the
operator's metrics.

``GET /healthz``: the process answers. ``GET /readyz``: the store is open and the writer
commits (``edge.actors.readiness``). Probes are shared: callers during a probe wait for that
one, and a result stands for ``PROBE_FRESH_S``, so an unauthenticated caller cannot turn
readiness checks into commit load.
"""

from __future__ import annotations

import ipaddress

import trio

from edge.actors import readiness
from edge.actors.context import NodeContext
from edge.domain.clientaddr import parse_networks
from edge.errors import Unauthorized, unavailable
from edge.http.asgi import Receive, Scope, Send, answer
from edge.http.auth import is_admin_token, parse_bearer
from edge.http.errors import method_not_allowed
from edge.http.jsonio import dumps
from edge.metrics import CONTENT_TYPE

HEALTH = "/healthz"
READY = "/readyz"
METRICS = "/metrics"
ROUTES = (("GET", HEALTH), ("GET", READY), ("GET", METRICS))
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
            self._ready = await readiness.store_commits(self.ctx)
            self._checked_at = trio.current_time()
        finally:
            self._probe = None
            done.set()
        return self._ready


class MetricsRoute:
    """``GET /metrics``: for the operator, by the operator's token or from an address in
    ``EDGE_METRICS_ALLOW`` (a Prometheus scraper on the node's network)."""

    def __init__(self, ctx: NodeContext) -> None:
        self.ctx = ctx
        self._allowed = parse_networks(ctx.settings.metrics_allow)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["method"] not in ("GET", "HEAD"):
            raise method_not_allowed(_ALLOW)
        if not self._permitted(scope):
            raise Unauthorized(
                "unauthorized",
                "Metrics are for the operator: its token, or an address in EDGE_METRICS_ALLOW.",
            )
        body = await self.ctx.metrics.text()
        await answer(
            send,
            200,
            body,
            _NO_STORE,
            head=scope["method"] == "HEAD",
            content_type=(b"content-type", CONTENT_TYPE.encode()),
        )

    def _permitted(self, scope: Scope) -> bool:
        header = next((v for n, v in scope["headers"] if n == b"authorization"), None)
        token = parse_bearer(header.decode("latin-1")) if header is not None else None
        if token is not None and is_admin_token(token, self.ctx):
            return True
        peer = (scope.get("client") or ("", 0))[0]
        try:
            address = ipaddress.ip_address(peer)
        except ValueError:
            return False
        return any(address in network for network in self._allowed)
