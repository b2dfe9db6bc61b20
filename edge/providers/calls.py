"""Calls to a provider's API, one way for every adapter: ``call`` (or ``send``, where an adapter
reads a refusal's details itself, as PayPal's does), so that a failure means the same whichever
provider it came from (CONTRACT 4.3: ``502 provider_error``).

- No answer (the connection refused, reset or timed out, an address the node does not call) is
  retryable; the message names the error's class only, because its text may carry the request.
- An answer is kept up to ``MAX_ANSWER`` bytes and no further, and its JSON is read by one rule
  (``read_json``): an empty body is ``{}``; one that is not JSON, or is larger, is None.
- A refusal (``refusal``): 5xx and 429 are retryable (the provider may answer otherwise later);
  any other status that is not 2xx is not (the provider refused the request itself, and will
  again). The message is the provider's own words for it (``Api.words``), with every secret of
  the call taken out; a ``Retry-After`` in seconds rides on the error's headers.
- A success that is not a JSON object is retryable.

The adapters put credentials into headers only; ``hidden`` names them once more so that no
message the node keeps or answers contains them, whatever the provider echoed.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx
import trio

from edge.errors import ProviderError

MAX_ANSWER = 1 << 20  # bytes of an answer the node reads
MAX_MESSAGE = 500
HIDDEN = "[secret]"

# a provider's own words for a refusal, read from its answer's JSON (None when it says nothing)
Words = Callable[[Any], str | None]


# refusals a retry can change, whoever the provider: too many requests, a request timeout
RETRYABLE = frozenset({408, 429})


class Unanswered(ProviderError):
    """The request reached the provider and its answer never came (it timed out, or the
    connection was cut half-way): the provider may still be carrying it out."""


# the request was sent whole: the provider may be acting on it
_SENT = (httpx.ReadTimeout, httpx.ReadError, httpx.RemoteProtocolError)


@dataclass(frozen=True)
class Api:
    """A provider's API as the node calls it: its name in messages, its words for a refusal."""

    name: str  # "Stripe", "BTCPay Server"
    words: Words
    # refusals of this provider that a retry can change, besides every provider's (5xx, 429,
    # 408): Stripe's 409 idempotency_key_in_use while the first request with the key still runs
    retry_also: frozenset[int] = frozenset()


@dataclass(frozen=True)
class Answer:
    """What a provider answered: the status, its JSON (``read_json``) and the bytes read;
    ``retry_after_s`` when it said how long to wait (``Retry-After`` in seconds, on a 429 or
    503)."""

    status: int
    json: Any
    raw: bytes
    retry_after_s: float | None = None

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    @property
    def body(self) -> dict[str, Any]:
        """The JSON object answered; ``{}`` when the answer is no JSON object."""
        return self.json if isinstance(self.json, dict) else {}


async def call(
    http: httpx.AsyncClient,
    api: Api,
    method: str,
    url: str,
    *,
    headers: Mapping[str, str],
    hidden: Iterable[str],
    content: bytes | None = None,
    json_body: Any = None,
) -> dict[str, Any]:
    """One request; the JSON object of a 2xx answer. ``ProviderError`` for no answer, a refusal
    (``refusal``) or a success that is not a JSON object."""
    answer = await send(
        http, api, method, url, headers=headers, content=content, json_body=json_body
    )
    if not answer.ok:
        raise refusal(api, answer, hidden)
    if not isinstance(answer.json, dict):
        raise not_an_object(api)
    return answer.json


async def send(
    http: httpx.AsyncClient,
    api: Api,
    method: str,
    url: str,
    *,
    headers: Mapping[str, str],
    content: bytes | None = None,
    json_body: Any = None,
) -> Answer:
    """One request; whatever the provider answered, read (at most ``MAX_ANSWER`` bytes).
    ``ProviderError`` (retryable) when it did not answer."""
    try:
        request = http.build_request(method, url, headers=headers, content=content, json=json_body)
        response = await http.send(request, stream=True)
        try:
            raw = await _read(response)
        finally:
            await response.aclose()
    except httpx.HTTPError as exc:
        # the exception's text may carry the request; its class says enough
        said = f"Could not reach {api.name} ({type(exc).__name__})."
        if isinstance(exc, _SENT):
            raise Unanswered("provider_error", said) from None
        raise provider_error(said) from None
    return Answer(
        response.status_code,
        None if raw is None else read_json(raw),
        raw or b"",
        retry_after(response.headers.get("retry-after")),
    )


MAX_RETRY_AFTER_S = 3600.0  # a provider asking for longer is asked again after an hour


def retry_after(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` header given in seconds (the form every provider here
    uses); None when absent or not a number of seconds."""
    if value is None or not value.strip().isdigit() or len(value.strip()) > 9:
        return None
    return min(float(value.strip()), MAX_RETRY_AFTER_S)


async def _read(response: httpx.Response) -> bytes | None:
    """The answer's bytes; None when they pass ``MAX_ANSWER``. One that says so up front
    (``Content-Length``) is not read at all; one that turns out longer is read no further (an
    endless answer would hold the call to its time limit): the read is cancelled, which
    closes the connection and ends httpx's chain of generators with it, where leaving the
    loop would leave them unexhausted."""
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_ANSWER:
        return None
    read, over = bytearray(), False
    with trio.CancelScope() as reading:
        async for chunk in response.aiter_bytes():
            if over:
                continue  # bytes already buffered: the cancel takes effect at the next wait
            read += chunk
            over = len(read) > MAX_ANSWER
            if over:
                read.clear()
                reading.cancel()
    return None if over else bytes(read)


def read_json(raw: bytes) -> Any:
    """The JSON of an answer: ``{}`` for an empty body, None for one that is not JSON."""
    if not raw.strip():
        return {}
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return None


def refusal(api: Api, answer: Answer, hidden: Iterable[str]) -> ProviderError:
    """The error for an answer that is not 2xx: retryable for 5xx, 429 and 408 (and the
    provider's ``retry_also``), in the provider's own words, no secret of ``hidden`` in
    them."""
    message = f"{api.name} answered {answer.status}"
    words = api.words(answer.json)
    if words:
        message += ": " + words
    for secret in hidden:
        if secret:
            message = message.replace(secret, HIDDEN)
    retryable = answer.status >= 500 or answer.status in RETRYABLE | api.retry_also
    error = provider_error(message, retryable=retryable)
    if answer.retry_after_s is not None:
        # the node paces its calls to this provider account by it
        error.headers["Retry-After"] = str(int(answer.retry_after_s))
    return error


def not_an_object(api: Api) -> ProviderError:
    return provider_error(f"{api.name} answered with something that is not a JSON object.")


def provider_error(message: str, retryable: bool = True) -> ProviderError:
    """``502 provider_error`` with ``message`` as a sentence of at most ``MAX_MESSAGE``."""
    message = message[: MAX_MESSAGE - 1]
    return ProviderError(
        "provider_error", message if message.endswith(".") else message + ".", retryable=retryable
    )
