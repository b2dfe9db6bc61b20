"""Redirect targets and allowed origins (CONTRACT §4.2 successUrl/cancelUrl).

A checkout's success and cancel URLs are where the provider sends the buyer
back, so an attacker-chosen URL would turn the node into an open redirect.
Parsing is deliberately strict: anything a browser might read differently from
``urllib`` (backslashes, control chars, userinfo, non-ASCII hosts) is refused
rather than interpreted.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit

from .errors import InvalidInput

_DEFAULT_PORTS = {"https": 443, "http": 80}
_LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
_HOST_RE = re.compile(r"[a-z0-9](?:[a-z0-9.-]*[a-z0-9])?|\[[0-9a-f:.]+\]")
# Browsers strip or reinterpret C0 controls, space, DEL and "\" in URLs.
_UNSAFE_RE = re.compile(r"[\x00-\x20\x7f\\]")
# The transaction id's placeholder in a success or cancel address (CONTRACT 4.2), as written or
# as a URL library percent-encodes it.
_TX_ID_RE = re.compile(r"\{TX_ID\}|%7[Bb]TX_ID%7[Dd]")


def _parse(url: object) -> tuple[str, str, str] | None:
    """(scheme, host, origin) of a clean absolute http(s) URL, else None."""
    if not isinstance(url, str) or len(url) > 2048 or not url.isascii():
        return None
    if _UNSAFE_RE.search(url):
        return None
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not url[len(scheme) :].startswith("://"):
        return None
    netloc = parts.netloc
    if "@" in netloc or not netloc:
        return None
    host_text = netloc.rsplit(":", 1)[0] if not netloc.endswith("]") else netloc
    host_text = host_text.lower()
    if _HOST_RE.fullmatch(host_text) is None:
        return None
    host = host_text.strip("[]")
    origin = f"{scheme}://{host_text}"
    if port is not None and port != _DEFAULT_PORTS[scheme]:
        origin += f":{port}"
    return scheme, host, origin


def _scheme_allowed(scheme: str, host: str) -> bool:
    # Plain http only for a developer's own machine.
    return scheme == "https" or host in _LOOPBACK_HOSTS


def origin_of(url: str) -> str | None:
    """``scheme://host[:port]`` of an absolute http(s) URL, lower-cased, default
    port dropped; None for anything else (including userinfo and unsafe chars)."""
    parsed = _parse(url)
    return parsed[2] if parsed else None


def redirect_allowed(url: object, allowed_origins: Iterable[str]) -> bool:
    """True iff ``url`` is a safe absolute redirect into one of ``allowed_origins``.

    https only (http just for localhost, 127.0.0.1 and [::1]); the URL's
    origin must equal one of the allowed origins after normalization.
    Unparseable entries in ``allowed_origins`` are ignored.
    """
    parsed = _parse(url)
    if parsed is None or not _scheme_allowed(parsed[0], parsed[1]):
        return False
    allowed = {origin_of(o) for o in allowed_origins}
    return parsed[2] in allowed


def validate_origin(text: object, field: str | None = None) -> str:
    """The normalized origin of ``text`` or InvalidInput.

    ``text`` must be a bare origin (an optional trailing "/" is tolerated, no
    path, query or fragment) with a scheme ``redirect_allowed`` would accept.
    """
    parsed = _parse(text)
    if parsed is None:
        raise InvalidInput(f"{text!r} is not an origin like https://shop.example.", field=field)
    assert isinstance(text, str)
    parts = urlsplit(text)
    if parts.path not in ("", "/") or parts.query or parts.fragment or "?" in text or "#" in text:
        raise InvalidInput(
            "An origin is only scheme, host and port, without a path, query or fragment.",
            field=field,
        )
    if not _scheme_allowed(parsed[0], parsed[1]):
        raise InvalidInput("An origin must use https (http only for localhost).", field=field)
    return parsed[2]


def with_own_origins(project: Mapping[str, Any]) -> list[str]:
    """A project's allowed origins with those of its own ``successUrl`` and ``cancelUrl`` added
    (the merchant named them: a per-call address on the same origin is as much theirs), so a
    project's own addresses are always on its allowed origins when they are safe redirects."""
    origins = list(project.get("allowedOrigins") or [])
    for name in ("successUrl", "cancelUrl"):
        parsed = _parse(project.get(name))
        if parsed is not None and _scheme_allowed(parsed[0], parsed[1]):
            known = {origin_of(o) for o in origins}
            if parsed[2] not in known:
                origins.append(parsed[2])
    return origins


def first_disallowed_redirect(project: Mapping[str, Any]) -> str | None:
    """The first of a project's ``successUrl`` and ``cancelUrl`` that is not a safe redirect
    into its ``allowedOrigins`` (CONTRACT 4.6: the per-call rules hold for the project's own),
    or None."""
    origins = project.get("allowedOrigins") or []
    for name in ("successUrl", "cancelUrl"):
        url = project.get(name)
        if url is not None and not redirect_allowed(url, origins):
            return name
    return None


def with_tx_id(url: str, tx_id: str) -> str:
    """``url`` with every ``{TX_ID}`` (or its percent-encoded ``%7BTX_ID%7D``) replaced by
    ``tx_id``, so the merchant's page learns which transaction to ask about, as Stripe's
    ``{CHECKOUT_SESSION_ID}`` does. A tx id is URL-safe: it needs no escaping."""
    return _TX_ID_RE.sub(tx_id, url)


def redirect_rule(name: str) -> str:
    """Why ``name`` (a redirect address) was refused, in words."""
    return (
        f"{name} must be https (http only on localhost), without userinfo, "
        "on one of the project's allowedOrigins"
    )


def handout_allowed(url: object) -> bool:
    """A provider's address (checkout, approval, portal) may reach the buyer: a clean absolute
    https URL (http only on this machine, where the simulators run); never ``javascript:``,
    ``data:``, userinfo or anything else."""
    parsed = _parse(url)
    return parsed is not None and _scheme_allowed(parsed[0], parsed[1])
