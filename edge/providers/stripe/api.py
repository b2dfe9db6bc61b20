"""Calls to Stripe's API, one way for the adapter's every module (``edge.providers.calls``:
its errors, limits and retry rule).

Requests are Stripe's: form-encoded parameters (``form``, bracket notation, lists indexed as
stripe-python encodes them: ``expand[0]=...``), in the body of a POST and in the query of a
GET; ``Authorization: Bearer <secret key>``; ``Idempotency-Key`` on a POST that must happen
once. The secret key goes only into that header, and is taken out of every message.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import httpx

from edge.errors import ProviderError
from edge.providers import calls
from edge.providers.answers import at
from edge.providers.stripe import form

DEFAULT_API_BASE = "https://api.stripe.com"


def _error_message(body: Any) -> str | None:
    """Stripe's ``error.message``."""
    error = body.get("error") if isinstance(body, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    return message if isinstance(message, str) and message else None


# a refund retried while Stripe still runs the first attempt with its Idempotency-Key is 409
# idempotency_key_in_use (stripe.com/docs/api/idempotent_requests): later, it answers the first
API = calls.Api("Stripe", _error_message, retry_also=frozenset({409}))


def error_code(body: Any) -> str | None:
    """Stripe's ``error.code`` (``resource_missing``, ``rate_limit`` ...)."""
    error = body.get("error") if isinstance(body, dict) else None
    code = error.get("code") if isinstance(error, dict) else None
    return code if isinstance(code, str) else None


async def post(
    http: httpx.AsyncClient,
    credentials: Mapping[str, Any],
    path: str,
    params: Mapping[str, Any],
    idempotency_key: str | None = None,
) -> dict[str, Any]:
    """POST ``params`` as a form; the JSON object Stripe answered."""
    headers = {**_auth(credentials), "Content-Type": "application/x-www-form-urlencoded"}
    if idempotency_key:
        headers["Idempotency-Key"] = idempotency_key
    return await calls.call(
        http,
        API,
        "POST",
        _base(credentials) + path,
        headers=headers,
        hidden=[_key(credentials)],
        content=form.encode(params).encode(),
    )


async def get(
    http: httpx.AsyncClient,
    credentials: Mapping[str, Any],
    path: str,
    query: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """GET ``path`` with ``query``; the JSON object Stripe answered."""
    return await calls.call(
        http,
        API,
        "GET",
        url(credentials, path, query),
        headers=_auth(credentials),
        hidden=[_key(credentials)],
    )


async def get_answer(
    http: httpx.AsyncClient,
    credentials: Mapping[str, Any],
    path: str,
    query: Mapping[str, Any] | None = None,
) -> calls.Answer:
    """GET ``path`` with ``query``; whatever Stripe answered (its refusals read by the caller:
    ``refusal``)."""
    return await calls.send(
        http, API, "GET", url(credentials, path, query), headers=_auth(credentials)
    )


def refusal(credentials: Mapping[str, Any], answer: calls.Answer) -> ProviderError:
    """The error for a refusal ``get_answer`` returned."""
    return calls.refusal(API, answer, [_key(credentials)])


async def list_all(
    http: httpx.AsyncClient,
    credentials: Mapping[str, Any],
    path: str,
    query: Mapping[str, Any],
) -> list[dict[str, Any]]:
    """Every object of a Stripe list (``GET`` ``path``, 100 a page), following ``has_more``
    with ``starting_after`` = the last object of the page (docs.stripe.com/api/pagination)."""
    items: list[dict[str, Any]] = []
    after: str | None = None
    while True:
        page = await get(http, credentials, path, {**query, "limit": 100, "starting_after": after})
        data = page.get("data")
        objects = [o for o in data if isinstance(o, dict)] if isinstance(data, list) else []
        items += objects
        last = objects[-1].get("id") if objects else None
        if page.get("has_more") is not True or not isinstance(last, str) or last == after:
            return items
        after = last


def url(credentials: Mapping[str, Any], path: str, query: Mapping[str, Any] | None) -> str:
    encoded = form.encode(query) if query else ""
    return _base(credentials) + path + (f"?{encoded}" if encoded else "")


def _base(credentials: Mapping[str, Any]) -> str:
    return str(credentials.get("apiBase") or DEFAULT_API_BASE).rstrip("/")


def _key(credentials: Mapping[str, Any]) -> str:
    return str(credentials["secretKey"])


def _auth(credentials: Mapping[str, Any]) -> dict[str, str]:
    return {"Authorization": f"Bearer {_key(credentials)}"}


# What the node reads of Stripe's answers (``edge.providers.answers``).


@dataclass(frozen=True)
class CheckoutSession:
    LACKING: ClassVar[str] = "a checkout session address"
    id: str
    url: str
    expires_at: int | None


@dataclass(frozen=True)
class PortalSession:
    LACKING: ClassVar[str] = "a portal address"
    url: str = at()
