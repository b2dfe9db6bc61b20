"""Which address a request comes from, when proxies may stand in front of the node.

The socket peer is the truth. ``X-Forwarded-For`` is believed only when the peer itself is a
trusted proxy, and then only up to the first hop that is not trusted (reading from the right),
so a client cannot choose its own address by sending the header.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Sequence

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def parse_networks(entries: Iterable[str]) -> tuple[Network, ...]:
    """Addresses or CIDR ranges; raises ValueError naming a bad entry."""
    networks = []
    for entry in entries:
        try:
            networks.append(ipaddress.ip_network(entry.strip(), strict=False))
        except ValueError:
            raise ValueError(f"not an address or CIDR range: {entry!r}") from None
    return tuple(networks)


def _trusted(address: str, networks: Sequence[Network]) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(ip in network for network in networks)


def client_address(peer: str, forwarded_for: str | None, trusted: Sequence[Network]) -> str:
    if not trusted or not forwarded_for or not _trusted(peer, trusted):
        return peer
    hops = [hop.strip() for hop in forwarded_for.split(",") if hop.strip()]
    for hop in reversed(hops):
        if not _trusted(hop, trusted):
            try:
                return str(ipaddress.ip_address(hop))
            except ValueError:
                return peer  # a garbled header from behind the proxy: fall back to the proxy
    return hops[0] if hops else peer
