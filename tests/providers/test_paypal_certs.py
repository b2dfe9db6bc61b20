"""Where the node fetches PayPal's signing certificates from (edge.providers.paypal.certs): a
certificate host of the mode on https's own port (or a loopback simulator), a forged address
is a forgery (no certificate there: 401), never an outage (503) that PayPal would retry, and
an answer is read no further than a certificate's size."""

from __future__ import annotations

from typing import Any

import pytest
import trio
from support.asgi import serve_asgi
from support.raw_http import endless_answer
from support.waits import bound

from edge.errors import Unavailable
from edge.providers.egress import provider_client
from edge.providers.paypal import certs
from edge.sim.paypal.certificate import signing_certificate

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


async def test_a_certificate_is_read_and_kept_by_its_url() -> None:
    key, pem = signing_certificate("messageverificationcerts.sandbox.paypal.com")

    async def serving(scope: dict[str, Any], body: bytes) -> tuple[int, bytes]:
        return 200, pem

    async with trio.open_nursery() as nursery:
        base = await nursery.start(serve_asgi, serving)
        async with provider_client(frozenset({"127.0.0.1"})) as http:
            found = await certs.public_key(http, f"{base}{CERT}-served")
        nursery.cancel_scope.cancel()
    assert found is not None and found.public_numbers() == key.public_key().public_numbers()


async def test_an_answer_past_a_certificates_size_is_read_no_further() -> None:
    """Anyone can name the certificate's URL in a delivery; a host that answers without end is
    read up to ``MAX_CERT`` and dropped: no certificate there (read whole, it would hold the
    delivery and fill the node's memory for as long as it kept sending)."""
    sent: list[int] = []
    async with trio.open_nursery() as nursery:
        port = await nursery.start(endless_answer, 200, sent)
        async with provider_client(frozenset({"127.0.0.1"})) as http:
            with trio.fail_after(bound(10)):
                assert await certs.public_key(http, f"http://127.0.0.1:{port}{CERT}-x") is None
        nursery.cancel_scope.cancel()
    assert sum(sent) < 1 << 20  # a few chunks at most: what the sockets' buffers took


async def test_an_answer_larger_than_a_certificate_is_no_certificate() -> None:
    async def large(scope: dict[str, Any], body: bytes) -> tuple[int, bytes]:
        return 200, b"-" * (certs.MAX_CERT + 1)

    async with trio.open_nursery() as nursery:
        base = await nursery.start(serve_asgi, large)
        async with provider_client(frozenset({"127.0.0.1"})) as http:
            assert await certs.public_key(http, f"{base}{CERT}-large") is None
        nursery.cancel_scope.cancel()
