import pytest

from edge.domain.clientaddr import client_address, parse_networks

PROXIES = parse_networks(["10.0.0.0/8", "192.0.2.7"])


def test_without_trusted_proxies_the_peer_is_the_client():
    assert client_address("203.0.113.9", "1.2.3.4", ()) == "203.0.113.9"


def test_a_spoofed_header_from_an_untrusted_peer_changes_nothing():
    assert client_address("203.0.113.9", "1.2.3.4", PROXIES) == "203.0.113.9"


def test_a_trusted_proxy_passes_the_client_on():
    assert client_address("10.1.2.3", "198.51.100.4", PROXIES) == "198.51.100.4"
    assert client_address("192.0.2.7", "198.51.100.4", PROXIES) == "198.51.100.4"


def test_only_the_hops_added_by_trusted_proxies_are_believed():
    # the client prepended a fake address; the proxy appended the real one
    assert client_address("10.1.2.3", "6.6.6.6, 198.51.100.4, 10.9.9.9", PROXIES) == "198.51.100.4"


def test_garbage_from_behind_a_proxy_falls_back_to_the_proxy():
    assert client_address("10.1.2.3", "not-an-ip", PROXIES) == "10.1.2.3"


def test_ipv6_and_bad_entries():
    nets = parse_networks(["::1", "fd00::/8"])
    assert client_address("::1", "2001:db8::5", nets) == "2001:db8::5"
    with pytest.raises(ValueError):
        parse_networks(["10.0.0.0/33"])
