"""PayPal's signing certificates, fetched from ``PAYPAL-CERT-URL`` (CONTRACT 4.3, 4.6).

The URL arrives in the delivery, so anyone can name any address: it is fetched only when its
host is one of the mode's ``certHosts`` (by default PayPal's own), over https (http only to a
loopback simulator, which the node's client reaches only when the operator allows it), with no
credentials, query or fragment, never following a redirect. A certificate is kept by URL: PayPal
names each one uniquely, so one fetch serves every delivery signed with it.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from urllib.parse import urlsplit

import httpx
import trio
from cryptography.hazmat.primitives.asymmetric import rsa

from edge.errors import Unavailable
from edge.providers.egress import Refused
from edge.providers.paypal.signature import load_public_key

SANDBOX_CERT_HOSTS = ("api.sandbox.paypal.com", "api-m.sandbox.paypal.com")
LIVE_CERT_HOSTS = ("api.paypal.com", "api-m.paypal.com")
LOOPBACK = frozenset({"127.0.0.1", "::1", "localhost"})
KEPT = 64
MAX_CERT = 64 * 1024

_keys: OrderedDict[str, rsa.RSAPublicKey] = OrderedDict()


def default_hosts(test: bool) -> tuple[str, ...]:
    return SANDBOX_CERT_HOSTS if test else LIVE_CERT_HOSTS


def host_allowed(url: str, hosts: Iterable[str]) -> bool:
    """May the node fetch a certificate from ``url`` for a mode whose ``certHosts`` are
    ``hosts``? Decided from the URL alone, before any request."""
    if not url.isascii() or any(c in url for c in "@?#\\ \t\r\n"):
        return False
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (raises on a bad port)
    except ValueError:
        return False
    host = (parts.hostname or "").lower()
    allowed = {h.lower() for h in hosts}
    names = {h.rsplit(":", 1)[0] if h.count(":") == 1 else h for h in allowed}
    if not host or host not in names:
        return False
    if parts.scheme == "http":
        return host in LOOPBACK  # a simulator, reached only where the operator allows it
    # PayPal serves its certificates on https's own port: another one is not PayPal's
    return parts.scheme == "https" and (
        parts.port in (None, 443) or f"{host}:{parts.port}" in allowed
    )


async def public_key(http: httpx.AsyncClient, url: str) -> rsa.RSAPublicKey | None:
    """The RSA key of the certificate at ``url`` (an allowed one: ``host_allowed``); None when
    what is there is not a certificate, or nothing can be there (a port where nothing listens,
    an address the node does not call): a forged delivery is ``401``, never ``503``.
    ``503 unavailable`` when it cannot be fetched now (a timeout, a 5xx): PayPal retries the
    delivery, and a passing outage must not count as a forgery."""
    key = _keys.get(url)
    if key is not None:
        _keys.move_to_end(url)
        return key
    try:
        async with http.stream("GET", url, headers={"Accept": "*/*"}) as response:
            if response.status_code >= 500:
                raise Unavailable("unavailable", "PayPal's certificate could not be fetched now.")
            content = await _certificate(response) if response.status_code == 200 else None
    except httpx.HTTPError as exc:
        if _nothing_there(exc):
            return None  # not PayPal's: a forged address is no outage for PayPal to retry
        raise Unavailable(
            "unavailable", f"PayPal's certificate could not be fetched ({type(exc).__name__})."
        ) from None
    if content is None:
        return None
    key = load_public_key(content)
    if key is not None:
        _keys[url] = key
        while len(_keys) > KEPT:
            _keys.popitem(last=False)
    return key


async def _certificate(response: httpx.Response) -> bytes | None:
    """The answer's bytes; None past ``MAX_CERT``, read no further (whoever serves the URL may
    answer without end). One that says so up front is not read at all; one that turns out
    longer is cut off by cancelling the read, which closes the connection and ends httpx's
    chain of generators with it: leaving the loop would leave them unexhausted."""
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_CERT:
        return None
    read = bytearray()
    with trio.CancelScope() as reading:
        async for chunk in response.aiter_bytes():
            read += chunk
            if len(read) > MAX_CERT:
                reading.cancel()
    return None if len(read) > MAX_CERT else bytes(read)


def _nothing_there(exc: BaseException) -> bool:
    """Did the fetch fail because no certificate can be there: an address the node never calls
    (``Refused``), or a port where nothing listens (every address refused the connection)?
    A timeout or a name that does not resolve may pass: those are answered 503."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, Refused):
            return True
        if isinstance(seen, BaseExceptionGroup):
            return all(isinstance(e, ConnectionRefusedError) for e in seen.exceptions)
        if isinstance(seen, ConnectionRefusedError):
            return True
        seen = seen.__cause__ or seen.__context__
    return False
