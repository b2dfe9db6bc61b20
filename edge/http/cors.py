"""CORS for the endpoints a buyer's browser calls (the button, or a merchant's own page):
any origin, no credentials, and the headers a page must read (the signature above all).

Headers go only on answers to a browser (a request with ``Origin``), except on public-info,
whose answers shared caches keep and hand to browsers later. Server-side polls carry none.
"""

from __future__ import annotations

from quart import Response, request

from edge.signing import HEADER as SIGNATURE_HEADER

# (status answers its browsers itself: edge.http.status)
BROWSER_ENDPOINTS = frozenset({"public.public_info", "checkout.start_checkout"})
CACHED_ENDPOINT = "public.public_info"
# The button never sends a key: a project key must not reach a browser.
REQUEST_HEADERS = "Content-Type, Idempotency-Key, Cm-Version"
EXPOSED_HEADERS = (
    f"{SIGNATURE_HEADER}, ETag, Cm-Request-Id, Cm-Version, Retry-After, "
    "RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset"
)
MAX_AGE = "600"


def add_cors(response: Response) -> None:
    rule = request.url_rule
    if rule is None or rule.endpoint not in BROWSER_ENDPOINTS:
        return
    if "Origin" not in request.headers and rule.endpoint != CACHED_ENDPOINT:
        return
    cors = [
        ("Access-Control-Allow-Origin", "*"),
        ("Access-Control-Expose-Headers", EXPOSED_HEADERS),
    ]
    if request.method == "OPTIONS" and "Access-Control-Request-Method" in request.headers:
        # Quart answered OPTIONS itself with the route's Allow: those are the methods allowed
        cors += [
            ("Access-Control-Allow-Methods", response.headers.get("Allow", "")),
            ("Access-Control-Allow-Headers", REQUEST_HEADERS),
            ("Access-Control-Max-Age", MAX_AGE),
        ]
    response.headers.extend(cors)
