"""Addresses the node calls (CONTRACT 4.6): public https only, unless the operator allows."""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import given
from hypothesis import strategies as st

from edge.domain.egress import (
    address_problem,
    allow_list,
    host_problem,
    operator_allows_host,
    public_address,
    unreachable_reason,
)

# The outside test's addresses, and their cousins.
REFUSED = [
    "http://169.254.169.254",
    "https://169.254.169.254/latest/meta-data",
    "http://metadata.google.internal",
    "https://metadata.google.internal/computeMetadata/v1",
    "http://127.0.0.1:22",
    "https://127.0.0.1",
    "https://[::1]:6379",
    "http://[::1]:6379",
    "https://[::ffff:127.0.0.1]",
    "https://2130706433",
    "https://0x7f000001",
    "https://127.1",
    "https://0177.0.0.1",
    "https://user:pass@api.stripe.com",
    "https://api.stripe.com@127.0.0.1",
    "http://evil.example#@127.0.0.1/",
    "https://evil.example/#@127.0.0.1/",
    "https://evil.example/?x=@127.0.0.1",
    "https://10.0.0.5",
    "https://192.168.1.1",
    "https://172.16.0.1",
    "https://100.64.0.1",
    "https://0.0.0.0",
    "https://[fd00::1]",
    "https://[fe80::1]",
    "https://localhost",
    "https://api.localhost",
    "https://intranet",
    "http://api.stripe.com",
    "ftp://api.stripe.com",
    "javascript:alert(1)",
    "https://api.stripe.com\\@127.0.0.1",
    "https:/api.stripe.com",
    "",
    7,
]
ALLOWED = [
    "https://api.stripe.com",
    "https://api.stripe.com/",
    "https://api-m.sandbox.paypal.com",
    "https://btcpay.shop.example:8443",
    "https://8.8.8.8",
    "https://[2606:4700::1111]",
]


@pytest.mark.parametrize("url", REFUSED)
def test_refused(url):
    assert address_problem(url) is not None


@pytest.mark.parametrize("url", ALLOWED)
def test_allowed(url):
    assert address_problem(url) is None


def test_the_operator_allows_by_host_or_host_and_port():
    allowed = allow_list([" 127.0.0.1 ", "sim.internal:8443", ""])
    assert allowed == {"127.0.0.1", "sim.internal:8443"}
    assert address_problem("http://127.0.0.1:4242", allowed) is None
    assert address_problem("https://sim.internal:8443", allowed) is None
    assert address_problem("http://sim.internal:9443", allowed) is not None  # not that port
    assert address_problem("http://127.0.0.1@evil.example", allowed) is not None


def test_a_host_list_entry_is_allowed_when_the_operator_allows_that_host_on_some_port():
    allowed = allow_list(["127.0.0.1:4242", "sim.internal"])
    assert operator_allows_host(allowed, "127.0.0.1")
    assert operator_allows_host(allowed, "SIM.internal")
    assert not operator_allows_host(allowed, "127.0.0.2")
    assert not operator_allows_host(allowed, "127.0.0")


FORBIDDEN = [
    "127.0.0.0/8",
    "10.0.0.0/8",
    "172.16.0.0/12",
    "192.168.0.0/16",
    "169.254.0.0/16",
    "100.64.0.0/10",
    "0.0.0.0/8",
    "224.0.0.0/4",
    "240.0.0.0/4",
]


def _in_ipv6(address: ipaddress.IPv4Address) -> list[str]:
    """IPv6 addresses that reach ``address``: mapped, translated, NAT64 (well-known prefix),
    6to4 and IPv4-compatible."""
    v4 = int(address)
    return [
        str(ipaddress.IPv6Address(v6))
        for v6 in (
            0xFFFF << 32 | v4,
            0xFFFF << 48 | v4,
            0x64FF9B << 96 | v4,
            0x2002 << 112 | v4 << 80 | 1,
            v4,
        )
    ]


@given(st.sampled_from(FORBIDDEN), st.integers(min_value=0, max_value=2**32))
def test_every_address_of_the_forbidden_networks_is_refused(network, offset):
    net = ipaddress.ip_network(network)
    address = net[offset % net.num_addresses]
    assert not public_address(str(address))
    for same in _in_ipv6(address):  # the same, reached through IPv6
        assert not public_address(same), same
        assert address_problem(f"https://[{same}]/") is not None
    assert host_problem(str(address)) is not None
    assert address_problem(f"https://{address}/") is not None


@pytest.mark.parametrize(
    "address",
    [
        "64:ff9b::a9fe:a9fe",  # NAT64 for 169.254.169.254
        "64:ff9b::7f00:1",
        "64:ff9b:1::a9fe:a9fe",  # NAT64's local-use prefix, wherever the IPv4 sits
        "64:ff9b:1:808:8:800::",
        "2002:a9fe:a9fe::1",  # 6to4 for 169.254.169.254
        "2002:a00:1::",
        "::a9fe:a9fe",  # IPv4-compatible
        "::7f00:1",
        "::ffff:0:a9fe:a9fe",  # IPv4-translated
        "fec0::1",  # site-local
        "2001:0:4136:e378:8000:63bf:3fff:fdd2",  # Teredo, whatever it carries
        "2001::808:808",
    ],
)
def test_an_ipv6_address_leading_to_a_private_one_is_refused(address):
    assert not public_address(address)
    assert host_problem(f"[{address}]") is not None
    assert address_problem(f"https://[{address}]/") is not None


@pytest.mark.parametrize(
    "address", ["64:ff9b::808:808", "2002:808:808::1", "::808:808", "::ffff:808:808"]
)
def test_an_ipv6_address_leading_to_a_public_ipv4_one_is_public(address):
    assert public_address(address)


@given(
    st.sampled_from(
        ["::1/128", "fc00::/7", "fe80::/10", "ff00::/8", "::/128", "fec0::/10", "2001::/32"]
    ),
    st.integers(0),
)
def test_every_forbidden_ipv6_address_is_refused(network, offset):
    net = ipaddress.ip_network(network)
    address = net[offset % net.num_addresses]
    assert address_problem(f"https://[{address}]/") is not None


@given(st.integers(min_value=0, max_value=2**32 - 1))
def test_an_address_written_as_one_number_is_refused(number):
    assert address_problem(f"https://{number}/") is not None
    assert address_problem(f"https://{hex(number)}/") is not None


@pytest.mark.parametrize(
    ("public_url", "says"),
    [
        ("http://127.0.0.1:8080", "is not a public address"),
        ("http://localhost:8080", "is a local or metadata name"),
        ("http://[::1]:8080", "is not a public address"),
        ("http://10.0.0.5", "is not a public address"),
        ("http://pay.example.com", "is not https"),
    ],
)
def test_a_public_url_providers_cannot_reach_is_told(public_url, says):
    reason = unreachable_reason(public_url)
    assert reason is not None and says in reason and "EDGE_PUBLIC_URL" in reason


def test_a_public_https_url_is_reachable():
    assert unreachable_reason("https://pay.example.com") is None
    assert unreachable_reason("https://pay.example.com:8443/edge") is None
