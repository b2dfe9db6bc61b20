"""The genuine PayPal-signed sandbox delivery (PROVIDERS.md "A genuine PayPal-signed vector")
verifies through the adapter's whole path: headers, the certificate fetched from an allowed
host, the signed string over the raw bytes. One byte changed, another webhook id, a re-serialized
body, another algorithm or a certificate host outside ``certHosts`` do not; the last is refused
before any request."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import trio
from support.asgi import serve_asgi

from edge.domain.egress import allow_list
from edge.providers.base import Delivery, SignatureInvalid
from edge.providers.egress import provider_client
from edge.providers.paypal import PAYPAL, certs

CERT_NAME = "sandbox_cert_CERT-360caa42-fca2a594-a5cafa77.pem"


class CertServer:
    """Serves PayPal's certificate, as ``api.sandbox.paypal.com`` did, and counts requests."""

    def __init__(self, pem: bytes) -> None:
        self.pem = pem
        self.requests: list[str] = []

    async def __call__(self, scope: dict[str, Any], body: bytes) -> tuple[int, bytes]:
        self.requests.append(scope["path"])
        return 200, self.pem


@pytest.fixture
def vector(provider_data: Path) -> dict[str, Any]:
    data = provider_data / "paypal"
    loaded: dict[str, Any] = json.loads((data / "webhook_vector_genuine.json").read_text())
    loaded["pem"] = (data / CERT_NAME).read_bytes()
    return loaded


@pytest.fixture
async def served(vector):  # type: ignore[no-untyped-def]
    certs._keys.clear()  # each test fetches afresh
    app = CertServer(vector["pem"])
    async with trio.open_nursery() as nursery:
        yield app, await nursery.start(serve_asgi, app)
        nursery.cancel_scope.cancel()


def headers(vector: dict[str, Any], cert_url: str, **changed: str) -> dict[str, str]:
    h = {
        "paypal-transmission-id": vector["transmission_id"],
        "paypal-transmission-time": vector["timestamp"],
        "paypal-transmission-sig": vector["actual_signature"],
        "paypal-cert-url": cert_url,
        "paypal-auth-algo": "SHA256withRSA",
    }
    h.update(changed)
    return h


async def verify(
    vector: dict[str, Any],
    base: str,
    body: bytes | None = None,
    webhook_id: str | None = None,
    cert_hosts: list[str] | None = None,
    **changed: str,
) -> str:
    cert_url = changed.pop(
        "cert_url", f"{base}/v1/notifications/certs/CERT-360caa42-fca2a594-a5cafa77"
    )
    credentials = {
        "test": {
            "clientId": "c",
            "clientSecret": "s",
            "webhookId": webhook_id or vector["webhook_id"],
            "certHosts": cert_hosts if cert_hosts is not None else ["127.0.0.1"],
        }
    }
    async with provider_client(allow_list(["127.0.0.1"])) as http:
        return await PAYPAL.verify_webhook(
            Delivery(
                headers(vector, cert_url, **changed),
                vector["event_body"].encode() if body is None else body,
                credentials,
                0.0,
                http,
            )
        )


async def test_the_genuine_delivery_verifies_with_the_certificate_fetched_once(vector, served):
    app, base = served
    assert await verify(vector, base) == "test"
    assert await verify(vector, base) == "test"
    assert app.requests == ["/v1/notifications/certs/CERT-360caa42-fca2a594-a5cafa77"]


@pytest.mark.parametrize(
    "tamper",
    ["one byte", "another webhook id", "re-serialized", "another transmission id"],
)
async def test_a_changed_delivery_does_not_verify(vector, served, tamper):
    _, base = served
    body = vector["event_body"].encode()
    kwargs: dict[str, Any] = {}
    if tamper == "one byte":
        kwargs["body"] = body[:100] + bytes([body[100] ^ 1]) + body[101:]
    elif tamper == "another webhook id":
        kwargs["webhook_id"] = "8PT597110X687430LKGECATA"
    elif tamper == "re-serialized":
        kwargs["body"] = json.dumps(json.loads(body)).encode()
    else:
        kwargs["paypal-transmission-id"] = "dfb3be50-fd74-11e4-8bf3-77339302725c"
    with pytest.raises(SignatureInvalid) as refused:
        await verify(vector, base, **kwargs)
    assert refused.value.reason == "no_matching_signature"


async def test_a_certificate_host_outside_cert_hosts_is_never_asked(vector, served):
    app, base = served
    for cert_hosts, cert_url in [
        (["api.sandbox.paypal.com"], None),  # the served host is not in the list
        (["127.0.0.1"], "https://evil.example/v1/notifications/certs/CERT-1"),
        (["127.0.0.1"], f"{base}/certs/CERT-1?x=1"),
        (["127.0.0.1"], base.replace("http://", "http://user@") + "/certs/CERT-1"),
        (["127.0.0.1"], base.replace("http://", "ftp://") + "/certs/CERT-1"),
    ]:
        kwargs: dict[str, Any] = {"cert_hosts": cert_hosts}
        if cert_url:
            kwargs["cert_url"] = cert_url
        with pytest.raises(SignatureInvalid) as refused:
            await verify(vector, base, **kwargs)
        assert refused.value.reason == "no_matching_signature"
        assert "PAYPAL-CERT-URL" in refused.value.message
    assert app.requests == []


@pytest.mark.parametrize(
    ("header", "value", "reason"),
    [
        ("paypal-auth-algo", "SHA1withRSA", "malformed_header"),
        ("paypal-transmission-sig", "not base64!", "malformed_header"),
        ("paypal-transmission-sig", "", "missing_header"),
        ("paypal-cert-url", "", "missing_header"),
    ],
)
async def test_headers_that_cannot_be_read_say_so(vector, served, header, value, reason):
    _, base = served
    with pytest.raises(SignatureInvalid) as refused:
        await verify(vector, base, **{header: value})
    assert refused.value.reason == reason
