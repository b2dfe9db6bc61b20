"""Where the node fetches PayPal's signing certificates from (edge.providers.paypal.certs): a
certificate host of the mode on https's own port (or a loopback simulator), and a forged address
is a forgery (no certificate there: 401), never an outage (503) that PayPal would retry."""

from __future__ import annotations

from typing import Any

import pytest
import trio
from support.asgi import serve_asgi

from edge.errors import Unavailable
from edge.providers.egress import provider_client
from edge.providers.paypal import certs

HOSTS = ("api.sandbox.paypal.com", "api-m.sandbox.paypal.com")
CERT = "/v1/notifications/certs/CERT-360caa42-fca2a594-a5cafa77"


@pytest.mark.parametrize(
    ("url", "allowed"),
    [
        (f"https://api.sandbox.paypal.com{CERT}", True),
        (f"https://api.sandbox.paypal.com:443{CERT}", True),
        (f"https://api.sandbox.paypal.com:8443{CERT}", False),  # PayPal's host, not its port
        (f"https://api.sandbox.paypal.com:9{CERT}", False),
        (f"http://api.sandbox.paypal.com{CERT}", False),
        (f"https://evil.example{CERT}", False),
        (f"https://api.sandbox.paypal.com@evil.example{CERT}", False),
    ],
)
def test_a_certificate_host_on_httpss_own_port(url: str, allowed: bool) -> None:
    assert certs.host_allowed(url, HOSTS) is allowed


def test_a_port_named_in_cert_hosts_is_allowed() -> None:
    assert certs.host_allowed(f"https://certs.example:8443{CERT}", ["certs.example:8443"])


async def test_a_port_where_nothing_listens_is_no_certificate_not_an_outage() -> None:
    listener = trio.socket.socket()
    await listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    listener.close()  # nothing listens there now: every connection is refused
    async with provider_client(frozenset({"127.0.0.1"})) as http:
        assert await certs.public_key(http, f"http://127.0.0.1:{port}{CERT}") is None


async def test_an_address_the_node_never_calls_is_no_certificate() -> None:
    async with provider_client(frozenset()) as http:  # loopback not allowed
        assert await certs.public_key(http, f"http://127.0.0.1:9{CERT}") is None


async def test_a_certificate_host_that_fails_now_is_an_outage() -> None:
    async def failing(scope: dict[str, Any], body: bytes) -> tuple[int, bytes]:
        return 503, b""

    async with trio.open_nursery() as nursery:
        base = await nursery.start(serve_asgi, failing)
        async with provider_client(frozenset({"127.0.0.1"})) as http:
            with pytest.raises(Unavailable):
                await certs.public_key(http, f"{base}{CERT}-down")
        nursery.cancel_scope.cancel()
