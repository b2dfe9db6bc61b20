"""Calls to PayPal's REST API: OAuth client credentials, JSON in and out, PayPal's errors.

The access token (``POST /v1/oauth2/token``, Basic clientId:clientSecret) is cached per API base
and client until a minute before it expires, and fetched afresh once when PayPal answers 401
(a token revoked early). The client secret goes only into the token call's ``Authorization``
header; no message the node keeps or answers contains it or a token.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import time
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import httpx

from edge.errors import ProviderError
from edge.providers import answers, calls
from edge.providers.answers import at
from edge.providers.calls import Answer

SANDBOX_API = "https://api-m.sandbox.paypal.com"
LIVE_API = "https://api-m.paypal.com"
TOKEN_MARGIN_S = 60.0
TOKENS_KEPT = 256

_tokens: OrderedDict[tuple[str, str, str], tuple[str, float]] = OrderedDict()


def words(body: Any) -> str | None:
    """PayPal's own words for a refusal: its error name, issues and message."""
    body = body if isinstance(body, dict) else {}
    name = body.get("name") or body.get("error") or ""
    message = body.get("message") or body.get("error_description") or ""
    parts = [p for p in (str(name), ", ".join(issues(body)), str(message)) if p]
    return "; ".join(parts) or None


API = calls.Api("PayPal", words)


def issues(body: Mapping[str, Any]) -> tuple[str, ...]:
    """The ``details[].issue`` codes of a PayPal error (``ORDER_ALREADY_CAPTURED``)."""
    details = body.get("details")
    if not isinstance(details, list):
        return ()
    return tuple(
        d["issue"] for d in details if isinstance(d, dict) and isinstance(d.get("issue"), str)
    )


def refused(answer: Answer, credentials: Mapping[str, Any]) -> ProviderError:
    """A refusal's error, as every provider's (``calls.refusal``): neither the client secret
    nor an access token it was given (for any API base) is ever in its words."""
    secret = str(credentials["clientSecret"])
    digest = hashlib.sha256(secret.encode()).hexdigest()
    tokens = [token for (_, _, key), (token, _) in _tokens.items() if key == digest]
    return calls.refusal(API, answer, [secret, *tokens])


def api_base(credentials: Mapping[str, Any], test: bool) -> str:
    return str(credentials.get("apiBase") or (SANDBOX_API if test else LIVE_API)).rstrip("/")


async def call(
    http: httpx.AsyncClient,
    credentials: Mapping[str, Any],
    test: bool,
    method: str,
    path: str,
    body: Mapping[str, Any] | None = None,
    request_id: str | None = None,
) -> Answer:
    """One API call with a bearer token (``calls.send``). Any answer PayPal gives comes back
    (the caller reads refusals, ``refused``); no answer, or a success that is not a JSON
    object, is ``502 provider_error``."""
    base = api_base(credentials, test)
    headers = {"Content-Type": "application/json", "Prefer": "return=representation"}
    if request_id:
        headers["PayPal-Request-Id"] = request_id
    content = json.dumps(body).encode() if body is not None else b""
    for fresh in (False, True):
        token = await _token(http, credentials, base, fresh)
        answer = await calls.send(
            http,
            API,
            method,
            base + path,
            headers={**headers, "Authorization": f"Bearer {token}"},
            content=content,
        )
        if answer.status != 401:
            break
        _forget(credentials, base)
    if answer.ok and not isinstance(answer.json, dict):
        raise calls.not_an_object(API)
    return answer


async def _token(
    http: httpx.AsyncClient, credentials: Mapping[str, Any], base: str, fresh: bool
) -> str:
    key = _token_key(credentials, base)
    cached = _tokens.get(key)
    if cached is not None and not fresh and cached[1] > time.monotonic():
        _tokens.move_to_end(key)
        return cached[0]
    basic = base64.b64encode(
        f"{credentials['clientId']}:{credentials['clientSecret']}".encode()
    ).decode()
    answer = await calls.send(
        http,
        API,
        "POST",
        base + "/v1/oauth2/token",
        headers={
            "Authorization": f"Basic {basic}",
            "Content-Type": "application/x-www-form-urlencoded",
            "Accept": "application/json",
        },
        content=b"grant_type=client_credentials",
    )
    if answer.status in (400, 401):
        raise calls.provider_error("PayPal refused the client id and secret.", retryable=False)
    if not answer.ok:
        raise refused(answer, credentials)
    given = answers.read(API, answer.body, AccessToken)
    token, expires_in = given.access_token, given.expires_in
    lifetime = float(expires_in) if expires_in is not None and expires_in > 0 else 300.0
    _tokens[key] = (token, time.monotonic() + max(0.0, lifetime - TOKEN_MARGIN_S))
    _tokens.move_to_end(key)
    while len(_tokens) > TOKENS_KEPT:
        _tokens.popitem(last=False)
    return token


def _token_key(credentials: Mapping[str, Any], base: str) -> tuple[str, str, str]:
    # the secret is part of the key (a rotated secret gets its own token), as a hash only
    secret = hashlib.sha256(str(credentials["clientSecret"]).encode()).hexdigest()
    return (base, str(credentials["clientId"]), secret)


def _forget(credentials: Mapping[str, Any], base: str) -> None:
    _tokens.pop(_token_key(credentials, base), None)


_OBJECT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,127}")


def object_id(value: Any) -> str | None:
    """``value`` when it can be a PayPal object id in a request path (letters, digits, ``-``,
    ``_``): an id read from an answer never steers a call elsewhere."""
    return value if isinstance(value, str) and _OBJECT_ID.fullmatch(value) else None


def link(body: Mapping[str, Any], *rels: str) -> str | None:
    """The ``href`` of the first link with one of ``rels``, in that order of preference."""
    links = body.get("links")
    if not isinstance(links, list):
        return None
    for rel in rels:
        for item in links:
            if (
                isinstance(item, dict)
                and item.get("rel") == rel
                and isinstance(item.get("href"), str)
            ):
                return str(item["href"])
    return None


# What the node reads of PayPal's answers (``edge.providers.answers``).


@dataclass(frozen=True)
class AccessToken:
    LACKING: ClassVar[str] = "an access token"
    access_token: str
    expires_in: int | None


@dataclass(frozen=True)
class Order:
    LACKING: ClassVar[str] = "an order and its approval address"
    id: str
    approve: str = at(read=lambda body: link(body, "payer-action", "approve"))


@dataclass(frozen=True)
class Subscription:
    LACKING: ClassVar[str] = "a subscription and its approval address"
    id: str
    approve: str = at(read=lambda body: link(body, "approve"))


@dataclass(frozen=True)
class CatalogProduct:
    LACKING: ClassVar[str] = "a catalog product id"
    id: str


@dataclass(frozen=True)
class BillingPlan:
    LACKING: ClassVar[str] = "a billing plan id"
    id: str
