"""Whether a browser sent a request on another site's behalf (login CSRF): a page elsewhere
posting the login form with the attacker's e-mail and password would sign its visitor in to the
attacker's account, and what they then enter (a provider's keys) lands there.

Before a session exists there is no session token to check, so the browser's own word decides:
``Sec-Fetch-Site`` where it sends one (every current browser), else ``Origin``, which browsers
send on every cross-origin POST. A request with neither did not come from a browser's page
(a server, the command line), and login CSRF needs a browser.
"""

from __future__ import annotations

from collections.abc import Collection

from edge.domain.urls import origin_of

# the request came from the node's own pages, or from the person (a bookmark, the address bar)
_OWN_FETCHES = frozenset({"same-origin", "none"})


def is_cross_site(
    sec_fetch_site: str | None, origin: str | None, own_origins: Collection[str]
) -> bool:
    """``own_origins``: the node's origins, as ``edge.domain.urls.origin_of`` spells them.
    A sibling site (``same-site``) counts as another site: a subdomain may be anyone's."""
    if sec_fetch_site is not None:
        return sec_fetch_site.strip().lower() not in _OWN_FETCHES
    if origin is None:
        return False
    return origin_of(origin.strip()) not in own_origins  # "null" (a sandboxed frame) too


def own_origins(host: str | None, public_url: str) -> frozenset[str]:
    """The node's origins: its public address, and the address the request was sent to (its
    ``Host``), in either scheme (a proxy in front may end TLS)."""
    found = {origin_of(public_url)}
    if host:
        found |= {origin_of(f"{scheme}://{host}/") for scheme in ("http", "https")}
    return frozenset(o for o in found if o is not None)
