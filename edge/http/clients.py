"""Who a request is counted against: a project key, the operator, or the client's address (the
socket peer; ``X-Forwarded-For`` only from EDGE_TRUSTED_PROXIES)."""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

from quart import request

from edge.actors.messages import Charge
from edge.config import Settings
from edge.domain.clientaddr import Network, client_address, parse_networks
from edge.http.auth import Caller
from edge.http.context import node


@lru_cache(maxsize=4)
def _networks(entries: tuple[str, ...]) -> tuple[Network, ...]:
    return parse_networks(entries)


def client_ip() -> str:
    return client_ip_of(
        node().settings, request.remote_addr or "", request.headers.get("X-Forwarded-For")
    )


def client_ip_of(settings: Settings, peer: str, forwarded_for: str | None) -> str:
    return client_address(peer, forwarded_for, _networks(settings.trusted_proxies))


def charge(endpoint: str, caller: Caller | None = None) -> Charge:
    """The bucket of ``endpoint``: per key when one is sent, else per client address."""
    return charge_of(endpoint, caller, client_ip)


def charge_of(endpoint: str, caller: Caller | None, address: Callable[[], str]) -> Charge:
    if caller is not None:
        return Charge(f"{endpoint}:key", caller.key_id or "operator")
    return Charge(f"{endpoint}:ip", address())
