"""The Greenfield API as the adapter calls it: one store of one BTCPay Server, reached with an
API key (``Authorization: token <apiKey>``), every call through ``edge.providers.calls`` (its
limits, its retry rule, no secret in a message).

Paths are the **store-scoped** ones (``/api/v1/stores/{storeId}/...``), which every 2.x server
has. The store-less aliases (``/api/v1/invoices/{invoiceId}/...``) came with v2.4.0
(btcpayserver#7313, commit ad6fa344c, first tagged v2.4.0): a 2.0 to 2.3 server answers 404 to
them. The pull payment reads (``/api/v1/pull-payments/{pullPaymentId}`` and its ``/payouts``)
are public on every 2.x (``GreenfieldPullPaymentController``, ``[AllowAnonymous]``); the key is
sent anyway, and a pull payment id the node reads always came from this store.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar
from urllib.parse import quote, urlencode

import httpx

from edge.providers import calls
from edge.providers.answers import at


def words(answer: Any) -> str | None:
    """Greenfield's errors: ``{code, message}``, or a list of ``{path, message}`` for a request
    that does not validate (422)."""
    if isinstance(answer, dict) and isinstance(answer.get("message"), str):
        return str(answer["message"])
    if isinstance(answer, list):
        parts = [
            f"{item.get('path')}: {item.get('message')}"
            for item in answer[:5]
            if isinstance(item, dict)
        ]
        return "; ".join(parts) or None
    return None


API = calls.Api("BTCPay Server", words)


@dataclass(frozen=True)
class Greenfield:
    """One store of one server, as its credentials name it."""

    http: httpx.AsyncClient
    server: str  # https://btcpay.example, no trailing slash
    store_id: str
    key: str

    @classmethod
    def of(cls, http: httpx.AsyncClient, credentials: Mapping[str, Any]) -> Greenfield:
        return cls(
            http,
            str(credentials["serverUrl"]).rstrip("/"),
            str(credentials["storeId"]),
            str(credentials["apiKey"]),
        )

    def store_url(self, path: str, **query: Any) -> str:
        """``{server}/api/v1/stores/{storeId}{path}``, with ``query``."""
        return self.url(f"/api/v1/stores/{quote(self.store_id, safe='')}{path}", **query)

    def url(self, path: str, **query: Any) -> str:
        given = {k: _query_value(v) for k, v in query.items() if v is not None}
        return self.server + path + (f"?{urlencode(given)}" if given else "")

    async def post(self, url: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """POST JSON; the JSON object answered (``calls.call``: its errors)."""
        return await calls.call(
            self.http, API, "POST", url, headers=self._headers(), hidden=[self.key], json_body=body
        )

    async def get(self, url: str) -> calls.Answer:
        """GET, whatever was answered (``ProviderError`` only when nothing was)."""
        return await calls.send(self.http, API, "GET", url, headers=self._headers())

    async def read(self, url: str) -> Any:
        """GET; the JSON of a 2xx answer (an object or a list), else ``ProviderError``."""
        answer = await self.get(url)
        return self.json_of(answer)

    def json_of(self, answer: calls.Answer) -> Any:
        """The JSON of a 2xx answer; the refusal (``calls.refusal``) or ``not_an_object`` for
        anything else."""
        if not answer.ok:
            raise calls.refusal(API, answer, [self.key])
        if not isinstance(answer.json, dict | list):
            raise calls.not_an_object(API)
        return answer.json

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"token {self.key}", "Accept": "application/json"}


def _query_value(value: Any) -> str:
    # ASP.NET binds booleans from "true"/"false"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


# What the node reads of Greenfield's answers (``edge.providers.answers``).


@dataclass(frozen=True)
class PullPaymentMade:
    LACKING: ClassVar[str] = "the refund's pull payment"
    id: str


@dataclass(frozen=True)
class Invoice:
    LACKING: ClassVar[str] = "an invoice and its checkout link"
    id: str
    checkout_link: str = at("checkoutLink")
    expiration_time: int | None = at("expirationTime")
