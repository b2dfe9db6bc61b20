"""The HTTP client the node calls providers with (CONTRACT 4.6): it resolves every name itself
when it connects and refuses one that resolves to an address the node does not call (a name set
to a public address when it was saved, and to 127.0.0.1 later: DNS rebinding), connects to the
address it checked, never follows a redirect and ignores proxy settings from the environment.
"""

from __future__ import annotations

import ssl
import typing
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit

import certifi
import httpcore
import httpx
import trio

from edge.domain.egress import host_problem, operator_allows, public_address


class Refused(httpcore.ConnectError):
    """The node does not call this address."""


Resolve = Callable[..., Awaitable[list[tuple[Any, ...]]]]


class VettedBackend(httpcore.AsyncNetworkBackend):
    def __init__(
        self, allowed: frozenset[str], resolve: Resolve | None = None, only: bool = False
    ) -> None:
        self.allowed = allowed
        self.only = only  # no host but the allowed ones
        self._resolve: Resolve = resolve or trio.socket.getaddrinfo
        self._inner = httpcore.TrioBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore's interface)
        local_address: str | None = None,
        socket_options: typing.Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        if not operator_allows(self.allowed, host, port):
            if self.only:
                raise Refused("the node calls only the hosts the operator allows")
            host = await self.vetted_address(host, port)
        return await self._inner.connect_tcp(
            host, port, timeout=timeout, local_address=local_address, socket_options=socket_options
        )

    async def vetted_address(self, host: str, port: int) -> str:
        """The address to connect to for ``host``: every address it resolves to must be public
        (one private answer among public ones is refused too: the resolver picks)."""
        problem = host_problem(host if ":" not in host else f"[{host}]")
        if problem:
            raise Refused(f"the node does not call this host: it {problem}")
        try:
            infos = await self._resolve(host, port, type=trio.socket.SOCK_STREAM)
        except OSError as exc:
            raise httpcore.ConnectError(f"cannot resolve the host ({exc.strerror})") from None
        addresses = [str(info[4][0]) for info in infos]
        if not addresses or not all(public_address(a) for a in addresses):
            raise Refused("the node does not call this host: it resolves to a private address")
        return addresses[0]

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore's interface)
        socket_options: typing.Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        raise Refused("the node does not call unix sockets")

    async def sleep(self, seconds: float) -> None:
        await trio.sleep(seconds)


async def resolves_private(
    url: str, allowed: frozenset[str], resolve: Resolve | None = None
) -> bool:
    """Does ``url``'s host name resolve to an address the node does not call? The check the
    client makes at each connection (``VettedBackend.vetted_address``), made when an account
    holder saves the address too; a name that does not resolve now is not refused here
    (sending will say so)."""
    try:
        parts = urlsplit(url)
        host, port = parts.hostname or "", parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:  # not a URL at all ("http://[", a port of letters): the rules refuse it
        return False
    if operator_allows(allowed, host, port) or host_problem(host) is not None:
        return False  # allowed, or refused already by the address rules
    try:
        await VettedBackend(allowed, resolve).vetted_address(host, port)
    except Refused:
        return True
    except httpcore.ConnectError:
        return False
    return False


class VettedTransport(httpx.AsyncHTTPTransport):
    def __init__(
        self,
        allowed: frozenset[str],
        limits: httpx.Limits,
        resolve: Resolve | None = None,
        only: bool = False,
    ) -> None:
        super().__init__(trust_env=False, limits=limits)
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=ssl.create_default_context(cafile=certifi.where()),
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=VettedBackend(allowed, resolve, only),
        )


def provider_client(
    allowed: frozenset[str],
    timeout_s: float = 15.0,
    resolve: Resolve | None = None,
    on_request: Callable[[httpx.Request], Awaitable[None]] | None = None,
    only: bool = False,
) -> httpx.AsyncClient:
    """The node's client for provider calls: checked addresses, no redirects, no proxies;
    ``on_request`` is awaited before each request (the node's pacing of provider accounts);
    ``only``: no host but the ``allowed`` ones."""
    limits = httpx.Limits(max_connections=100, max_keepalive_connections=20)
    return httpx.AsyncClient(
        transport=VettedTransport(allowed, limits, resolve, only),
        timeout=httpx.Timeout(timeout_s),
        follow_redirects=False,
        trust_env=False,
        event_hooks={"request": [on_request]} if on_request else None,
    )
