"""CORS for the endpoints a buyer's browser calls (the button, or a merchant's own page):
any origin, no credentials, and the headers a page must read (the signature above all).

Headers go only on answers to a browser (a request with ``Origin``), except on public-info,
whose answers shared caches keep and hand to browsers later. Server-side polls carry none.
Chosen by path, before any route runs (edge.http.middleware adds them).
"""

from __future__ import annotations

from collections.abc import Iterable

from edge.signing import HEADER as SIGNATURE_HEADER

# status polls and checkout starts, when a browser sends them
BROWSER_PREFIXES = ("/status/", "/api/checkout/")
CACHED_PREFIX, CACHED_SUFFIX = "/api/projects/", "/public-info"
# The button never sends a key: a project key must not reach a browser.
REQUEST_HEADERS = "Content-Type, Idempotency-Key, Cm-Version"
EXPOSED_HEADERS = (
    f"{SIGNATURE_HEADER}, ETag, Cm-Request-Id, Cm-Version, Retry-After, "
    "RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset"
)
MAX_AGE = "600"

_ANSWER = (
    (b"access-control-allow-origin", b"*"),
    (b"access-control-expose-headers", EXPOSED_HEADERS.encode()),
)
_PREFLIGHT = (
    (b"access-control-allow-headers", REQUEST_HEADERS.encode()),
    (b"access-control-max-age", MAX_AGE.encode()),
)


def applies(path: str, *, origin: bool) -> bool:
    """Whether the answer to ``path`` carries CORS headers; ``origin``: the request has one."""
    if origin and path.startswith(BROWSER_PREFIXES):
        return True
    return path.endswith(CACHED_SUFFIX) and path.startswith(CACHED_PREFIX)


def headers(
    answer: Iterable[tuple[bytes, bytes]], preflight: bool
) -> tuple[tuple[bytes, bytes], ...]:
    """The CORS headers for an answer. A preflight (``OPTIONS`` with
    ``Access-Control-Request-Method``) allows the methods the route's ``Allow`` names."""
    if not preflight:
        return _ANSWER
    allow = next((value for name, value in answer if name == b"allow"), b"")
    return (*_ANSWER, (b"access-control-allow-methods", allow), *_PREFLIGHT)
