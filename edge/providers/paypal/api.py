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
import time
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from edge.errors import ProviderError

SANDBOX_API = "https://api-m.sandbox.paypal.com"
LIVE_API = "https://api-m.paypal.com"
TOKEN_MARGIN_S = 60.0
TOKENS_KEPT = 256
MAX_ANSWER = 1 << 20

_tokens: OrderedDict[tuple[str, str, str], tuple[str, float]] = OrderedDict()


@dataclass(frozen=True)
class Answer:
    """A PayPal answer that came back: status, the JSON body (``{}`` when there was none) and
    the bytes it was read from."""

    status: int
    body: dict[str, Any]
    raw: bytes

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    def issues(self) -> tuple[str, ...]:
        """The ``details[].issue`` codes of a PayPal error (``ORDER_ALREADY_CAPTURED``)."""
        details = self.body.get("details")
        if not isinstance(details, list):
            return ()
        return tuple(
            d["issue"] for d in details if isinstance(d, dict) and isinstance(d.get("issue"), str)
        )

    def describe(self) -> str:
        """PayPal's own words for a refusal: its error name, issues and message."""
        name = self.body.get("name") or self.body.get("error") or ""
        message = self.body.get("message") or self.body.get("error_description") or ""
        issues = ", ".join(self.issues())
        parts = [p for p in (str(name), issues, str(message)) if p]
        return f"PayPal answered {self.status}" + (": " + "; ".join(parts) if parts else "")


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
    """One API call with a bearer token. Any answer PayPal gives comes back (the caller reads
    refusals); a transport failure or a body that is not JSON is ``502 provider_error``."""
    base = api_base(credentials, test)
    headers = {"Content-Type": "application/json", "Prefer": "return=representation"}
    if request_id:
        headers["PayPal-Request-Id"] = request_id
    content = json.dumps(body).encode() if body is not None else b""
    for fresh in (False, True):
        token = await _token(http, credentials, base, fresh)
        answer = await _send(
            http, method, base + path, content, {**headers, "Authorization": f"Bearer {token}"}
        )
        if answer.status != 401:
            break
        _forget(credentials, base)
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
    answer = await _send(
        http,
        "POST",
        base + "/v1/oauth2/token",
        b"grant_type=client_credentials",
        {
            "Authorization": f"Basic {basic}",
            "Content-Type": "application/x-www-form-urlencoded",
            "Accept": "application/json",
        },
    )
    token, expires_in = answer.body.get("access_token"), answer.body.get("expires_in")
    if not answer.ok or not isinstance(token, str) or not token:
        raise provider_error(
            "PayPal refused the client id and secret."
            if answer.status in (400, 401)
            else answer.describe() + "."
        )
    lifetime = float(expires_in) if isinstance(expires_in, int) and expires_in > 0 else 300.0
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


async def _send(
    http: httpx.AsyncClient, method: str, url: str, content: bytes, headers: dict[str, str]
) -> Answer:
    try:
        response = await http.request(method, url, content=content, headers=headers)
    except httpx.HTTPError as exc:
        # the exception text may carry the request; the class name says enough
        raise provider_error(f"Could not reach PayPal ({type(exc).__name__}).") from None
    raw = response.content[:MAX_ANSWER]
    if not raw.strip():
        return Answer(response.status_code, {}, raw)
    try:
        body = json.loads(raw)
    except ValueError:
        body = None
    if not isinstance(body, dict):
        raise provider_error(
            f"PayPal answered {response.status_code} with something that is not a JSON object."
        )
    return Answer(response.status_code, body, raw)


def provider_error(message: str, retryable: bool = True) -> ProviderError:
    return ProviderError("provider_error", message[:500], retryable=retryable)


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
