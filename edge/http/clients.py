"""Who a request is counted against: a project key, the operator, or the client's address (the
socket peer; ``X-Forwarded-For`` only from EDGE_TRUSTED_PROXIES)."""

from __future__ import annotations

from functools import lru_cache

from quart import request

from edge.actors.messages import Charge
from edge.domain.clientaddr import Network, client_address, parse_networks
from edge.http.auth import Caller
from edge.http.context import node


@lru_cache(maxsize=4)
def _networks(entries: tuple[str, ...]) -> tuple[Network, ...]:
    return parse_networks(entries)


def client_ip() -> str:
    trusted = _networks(node().settings.trusted_proxies)
    return client_address(request.remote_addr or "", request.headers.get("X-Forwarded-For"), trusted)


def charge(endpoint: str, caller: Caller | None = None) -> Charge:
    """The bucket of ``endpoint``: per key when one is sent, else per client address."""
    if caller is not None:
        return Charge(f"{endpoint}:key", caller.key_id or "operator")
    return Charge(f"{endpoint}:ip", client_ip())
