"""Addresses the node calls (CONTRACT 4.6, OWASP API7): a provider's API base, BTCPay's server,
PayPal's certificate hosts; later the merchant's notification endpoints.

An account holder sets these, so an address must not turn the node into a way into its own
network: only ``https`` to a name (or a canonical IP literal) that is public. Loopback,
link-local (cloud metadata), private, shared, reserved and unspecified addresses are refused,
so are IPv6 addresses that lead to one of them (NAT64, 6to4, IPv4-mapped), IP literals in
forms parsers disagree on (``2130706433``, ``0x7f000001``, ``127.1``, ``0177.0.0.1``),
userinfo, queries and fragments. The operator allows hosts by name (``host`` or
``host:port``) with ``EDGE_PROVIDER_HOSTS_ALLOW``: the demo and the tests call simulators on
loopback that way. The name is resolved again when the node connects (edge.providers.egress),
and every address it resolves to must pass ``public_address``.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from urllib.parse import urlsplit

# Names that are, or resolve to, a cloud provider's metadata service.
METADATA_NAMES = frozenset(
    {
        "metadata",
        "metadata.google.internal",
        "metadata.goog",
        "instance-data",
        "instance-data.ec2.internal",
        "metadata.azure.com",
    }
)
_LABEL = re.compile(r"(?!-)[a-z0-9-]{1,63}(?<!-)")
_NUMERIC_LABEL = re.compile(r"(0x[0-9a-f]*|[0-9]+)")
_UNSAFE = re.compile(r"[\x00-\x20\x7f\\]")


def allow_list(entries: Iterable[str]) -> frozenset[str]:
    """The operator's allowed hosts, lower-cased: ``host`` (any port) or ``host:port``."""
    return frozenset(e.strip().lower() for e in entries if e.strip())


def operator_allows(allowed: frozenset[str], host: str, port: int | None) -> bool:
    host = host.lower().strip("[]")
    return host in allowed or (port is not None and f"{host}:{port}" in allowed)


def operator_allows_host(allowed: frozenset[str], host: str) -> bool:
    """Does the operator allow ``host`` on some port? For a list of host names (PayPal's
    ``certHosts``): the client still connects only to an allowed port."""
    host = host.lower().strip("[]")
    return host in allowed or any(entry.rsplit(":", 1)[0] == host for entry in allowed)


# IPv6 prefixes that carry an IPv4 address in their last 32 bits, reaching that IPv4 host (a
# NAT64 gateway, a translator, or a host that takes IPv4-compatible addresses): ipaddress calls
# most of them global whatever the IPv4 inside is, 64:ff9b::a9fe:a9fe being 169.254.169.254
_EMBEDDING = (
    ipaddress.IPv6Network("64:ff9b::/96"),  # NAT64's well-known prefix (RFC 6052)
    ipaddress.IPv6Network("::ffff:0:0:0/96"),  # IPv4-translated (RFC 2765)
    ipaddress.IPv6Network("::/96"),  # IPv4-compatible, deprecated (RFC 4291)
)
# Prefixes refused whatever follows: NAT64's local-use prefix (RFC 8215: each network picks
# where the IPv4 sits in it, so which host it reaches cannot be told), Teredo (a server's IPv4
# and a client's, obfuscated: where a packet goes is a relay's choice) and site-local
# (deprecated, yet still routed inside some networks)
_NEVER = (
    ipaddress.IPv6Network("64:ff9b:1::/48"),
    ipaddress.IPv6Network("2001::/32"),
    ipaddress.IPv6Network("fec0::/10"),
)


def public_address(address: str) -> bool:
    """Is this IP address one the node may call? Only globally routable unicast; an IPv6
    address that reaches an IPv4 host (mapped, NAT64, 6to4, IPv4-compatible) only when that
    IPv4 address is."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address):
        if any(ip in net for net in _NEVER):
            return False
        if ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
        elif ip.sixtofour is not None:
            ip = ip.sixtofour
        elif any(ip in net for net in _EMBEDDING):
            ip = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return ip.is_global and not ip.is_multicast


def _canonical_ipv4(host: str) -> bool:
    parts = host.split(".")
    return len(parts) == 4 and all(
        p.isdigit() and (p == "0" or not p.startswith("0")) and int(p) <= 255 for p in parts
    )


def host_problem(host: str) -> str | None:
    """Why ``host`` (a name or an IP literal, without port) may not be called; None if it may
    (for a name: if it resolves to public addresses only, checked at connect time)."""
    host = host.lower()
    if host.startswith("["):
        if not host.endswith("]"):
            return "is not a host name"
        return None if public_address(host[1:-1]) else "is not a public address"
    labels = host.rstrip(".").split(".")
    if all(_NUMERIC_LABEL.fullmatch(label) for label in labels):
        if not _canonical_ipv4(host):
            return "is an IP address in an unusual form"
        return None if public_address(host) else "is not a public address"
    if not all(_LABEL.fullmatch(label) for label in labels):
        return "is not a host name"
    name = ".".join(labels)
    if name in METADATA_NAMES or name == "localhost" or name.endswith(".localhost"):
        return "is a local or metadata name"
    if len(labels) < 2:
        return "is not a fully qualified name"
    return None


def address_problem(
    url: object, allowed: frozenset[str] = frozenset(), *, query: bool = False
) -> str | None:
    """Why the node may not call ``url`` as a base address; None when it may. ``query``: the
    address is called as it is, so it may carry one (a base address is built on: it may not)."""
    if not isinstance(url, str) or not url.isascii() or len(url) > 1000:
        return "must be an https address"
    if _UNSAFE.search(url) or "@" in url or "#" in url or (not query and "?" in url):
        plain = "credentials or fragment" if query else "credentials, query or fragment"
        return f"must be a plain https address (no {plain})"
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return "must be an https address"
    host = parts.hostname or ""
    if (
        parts.scheme not in ("https", "http")
        or not host
        or not url.lower().startswith(parts.scheme + "://")
    ):
        return "must be an https address"
    if operator_allows(allowed, host, port):
        return None
    if parts.scheme != "https":
        return "must be https"
    netloc_host = parts.netloc.rsplit(":", 1)[0] if not parts.netloc.endswith("]") else parts.netloc
    problem = host_problem(netloc_host)
    return f"host {problem}" if problem else None


def endpoint_problem(url: object, allowed: frozenset[str] = frozenset()) -> str | None:
    """Why the node may not notify ``url`` (CONTRACT 4.8); None when it may. Like a provider's
    address (``address_problem``), with a path and a query allowed (a receiver may take a
    token there), and ``http://localhost`` too."""
    if isinstance(url, str) and len(url) <= 1000 and url.isascii():
        try:
            parts = urlsplit(url)
        except ValueError:
            return "must be an https address"
        if parts.scheme == "http" and (parts.hostname or "") == "localhost":
            return address_problem(
                url.replace("http://", "https://", 1),
                frozenset({"localhost"}) | allowed,
                query=True,
            )
    return address_problem(url, allowed, query=True)


def unreachable_reason(public_url: str) -> str | None:
    """Why a provider on the internet could not deliver webhooks to the node at its public
    address ``public_url`` (``EDGE_PUBLIC_URL``, else where it listens); None when it could."""
    parts = urlsplit(public_url)
    host = parts.hostname or ""
    problem = host_problem(f"[{host}]" if ":" in host else host)
    if problem:
        return (
            f"{public_url} {problem}. Set EDGE_PUBLIC_URL to the https address the internet"
            " reaches this node at (docs/operations.md)."
        )
    if parts.scheme != "https":
        return (
            f"{public_url} is not https, and live webhooks need https. Put the node behind a TLS"
            " proxy and set EDGE_PUBLIC_URL to its https address (docs/operations.md)."
        )
    return None
