"""Which pre-session requests count as sent from another site (edge.domain.cross_site)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from edge.domain.cross_site import is_cross_site, own_origins

OWN = own_origins("node.example:8080", "https://pay.example")


def test_own_origins_are_the_public_address_and_the_host_in_either_scheme():
    assert {"https://pay.example", "http://node.example:8080", "https://node.example:8080"} == OWN
    assert own_origins(None, "http://127.0.0.1:9") == {"http://127.0.0.1:9"}
    assert own_origins("evil@node.example", "https://pay.example") == {"https://pay.example"}


def test_the_browsers_word_decides():
    assert not is_cross_site("same-origin", None, OWN)
    assert not is_cross_site("none", None, OWN)  # typed or bookmarked by the person
    assert not is_cross_site(" Same-Origin ", "https://evil.example", OWN)
    for other in ("cross-site", "same-site", "", "bogus"):
        assert is_cross_site(other, "https://pay.example", OWN), other


def test_without_sec_fetch_site_the_origin_decides():
    assert not is_cross_site(None, "https://pay.example", OWN)
    assert not is_cross_site(None, "HTTPS://PAY.example:443", OWN)
    assert not is_cross_site(None, "http://node.example:8080", OWN)
    for other in ("https://evil.example", "null", "https://pay.example.evil", "http://pay.example"):
        assert is_cross_site(None, other, OWN), other


def test_a_request_from_no_browser_is_not_cross_site():
    assert not is_cross_site(None, None, OWN)


@given(st.text(max_size=30), st.one_of(st.none(), st.text(max_size=60)))
def test_any_fetch_site_but_the_nodes_own_is_refused_whatever_the_origin(site, origin):
    expected = site.strip().lower() not in ("same-origin", "none")
    assert is_cross_site(site, origin, OWN) is expected


@given(st.text(max_size=80))
def test_without_fetch_site_only_an_origin_of_the_node_passes(origin):
    from edge.domain.urls import origin_of

    assert is_cross_site(None, origin, OWN) is (origin_of(origin.strip()) not in OWN)
