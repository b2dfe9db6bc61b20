"""Calls to Paddle's API for one account (``edge.providers.calls``: its errors, limits and
retry rule).

- Every call carries ``Authorization: Bearer <API key>`` and ``Paddle-Version: 1``
  (developer.paddle.com/api-reference/about/versioning); the key goes nowhere else, and no
  message names it.
- Answers are Paddle's envelope: ``data`` (an entity, or a list) and ``meta``; refusals are
  ``{"error": {type, code, detail, documentation_url}}`` (openapi.yaml ``error``).
- Lists page with ``meta.pagination`` (openapi.yaml ``pagination``): ``next`` is "always
  returned, even if has_more is false", so a list is followed while ``has_more`` holds, by the
  ``after`` that ``next`` carries, always on the account's own base address (the node calls no
  address an answer hands it).
- Test mode goes to the sandbox unless the credentials' ``apiBase`` says otherwise.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar
from urllib.parse import parse_qs, urlsplit

import httpx

from edge.errors import ProviderError
from edge.providers import calls
from edge.providers.answers import at

LIVE_API_BASE = "https://api.paddle.com"
SANDBOX_API_BASE = "https://sandbox-api.paddle.com"  # the default for test mode
API_VERSION = "1"
MAX_PAGES = 20  # of a list the node follows: a transaction with more is read in part


def words(answer: Any) -> str | None:
    """Paddle's ``error.code`` and ``error.detail``."""
    error = answer.get("error") if isinstance(answer, dict) else None
    if not isinstance(error, dict):
        return None
    parts = [error.get("code"), error.get("detail")]
    text = "; ".join(p for p in parts if isinstance(p, str) and p)
    return text or None


def error_code(answer: calls.Answer) -> str | None:
    """The ``error.code`` of a refusal."""
    error = answer.body.get("error")
    code = error.get("code") if isinstance(error, dict) else None
    return code if isinstance(code, str) else None


API = calls.Api("Paddle", words)


@dataclass(frozen=True)
class Account:
    """One Paddle account as the node calls it: its API key and base address."""

    http: httpx.AsyncClient
    base: str
    key: str

    @classmethod
    def of(cls, http: httpx.AsyncClient, credentials: Mapping[str, Any], test: bool) -> Account:
        default = SANDBOX_API_BASE if test else LIVE_API_BASE
        base = str(credentials.get("apiBase") or default).rstrip("/")
        return cls(http, base, str(credentials["apiKey"]))

    async def answer(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: Mapping[str, Any] | None = None,
    ) -> calls.Answer:
        """Whatever Paddle answered (``ProviderError`` when it did not answer)."""
        url = str(httpx.URL(self.base + path, params=dict(params or {})))
        headers = {"Authorization": f"Bearer {self.key}", "Paddle-Version": API_VERSION}
        return await calls.send(self.http, API, method, url, headers=headers, json_body=body)

    def refused(self, answer: calls.Answer) -> ProviderError:
        """The ``ProviderError`` for a refusal, without the API key."""
        return calls.refusal(API, answer, [self.key])

    async def entity(
        self, method: str, path: str, body: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """The ``data`` object of a 2xx answer; ``ProviderError`` otherwise."""
        answer = await self.answer(method, path, body=body)
        if not answer.ok:
            raise self.refused(answer)
        return data_object(answer)

    async def listing(self, path: str, params: Mapping[str, str]) -> list[dict[str, Any]]:
        """Every entity of a list (at most ``MAX_PAGES`` pages), in Paddle's order."""
        return [entity async for entity in self.entities(path, params)]

    async def entities(
        self, path: str, params: Mapping[str, str]
    ) -> AsyncGenerator[dict[str, Any]]:
        """The entities of a list one by one, in Paddle's order, a page read when it is
        reached (at most ``MAX_PAGES``): a caller that stops early (inside ``aclosing``, as
        trio wants of a generator left unexhausted) reads no further."""
        after: str | None = None
        for _ in range(MAX_PAGES):
            page, after = await self.page(path, params, after)
            for entity in page:
                yield entity
            if after is None:
                return

    async def page(
        self, path: str, params: Mapping[str, str], after: str | None
    ) -> tuple[list[dict[str, Any]], str | None]:
        """One page of a list and the ``after`` of the next (None after the last)."""
        asked = {**params, **({"after": after} if after else {})}
        answer = await self.answer("GET", path, params=asked)
        if not answer.ok:
            raise self.refused(answer)
        data = answer.body.get("data")
        if not isinstance(data, list):
            raise calls.provider_error("Paddle answered a list with something that is not one.")
        return [d for d in data if isinstance(d, dict)], next_after(answer.body)


def data_object(answer: calls.Answer) -> dict[str, Any]:
    data = answer.body.get("data")
    if not isinstance(data, dict):
        raise calls.provider_error("Paddle answered with something that is not a Paddle entity.")
    return data


def next_after(body: Mapping[str, Any]) -> str | None:
    """The ``after`` of the next page while ``meta.pagination.has_more`` holds; else None."""
    meta = body.get("meta")
    pagination = meta.get("pagination") if isinstance(meta, dict) else None
    if not isinstance(pagination, dict) or pagination.get("has_more") is not True:
        return None
    following = pagination.get("next")
    if not isinstance(following, str):
        return None
    after = parse_qs(urlsplit(following).query).get("after")
    return after[0] if after and after[0] else None


# What the node reads of Paddle's answers (``edge.providers.answers``).


@dataclass(frozen=True)
class Transaction:
    LACKING: ClassVar[str] = "a transaction id"
    id: str = at(prefix="txn_")


@dataclass(frozen=True)
class PortalSession:
    LACKING: ClassVar[str] = "a portal address"
    url: str = at("urls", "general", "overview")
