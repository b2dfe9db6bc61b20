"""One way to call a provider (edge.providers.calls), and every adapter on it: no answer, 5xx,
429 and 408 are retryable (and Stripe's 409, a request with the same Idempotency-Key still
running), any other refusal is not; the provider's own words come back without the
credential's secret; answers are read up to 1 MiB; JSON is read by one rule."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx
import pytest
import trio
from hypercorn.config import Config
from hypercorn.trio import serve as serve_hypercorn
from support.asgi import serve_asgi
from support.waits import bound

from edge.errors import ProviderError
from edge.providers import calls
from edge.providers.base import CheckoutRequest, Provider
from edge.providers.registry import PROVIDERS

SECRET = "sk_test_0123456789abcdefSECRET"
API = calls.Api("Acme", lambda body: body.get("message") if isinstance(body, dict) else None)
Handler = Callable[[dict[str, Any], bytes], Awaitable[tuple[int, bytes]]]


@pytest.fixture
async def serve() -> AsyncIterator[Callable[[Handler], Awaitable[str]]]:
    async with trio.open_nursery() as nursery:

        async def start(handler: Handler) -> str:
            url: str = await nursery.start(serve_asgi, handler)
            return url

        yield start
        nursery.cancel_scope.cancel()


def answering(status: int, body: bytes) -> Handler:
    async def handler(scope: dict[str, Any], received: bytes) -> tuple[int, bytes]:
        return status, body

    return handler


async def _call(url: str) -> dict[str, Any]:
    async with httpx.AsyncClient() as http:
        return await calls.call(
            http, API, "POST", url, headers={"X": "y"}, hidden=[SECRET], json_body={"a": 1}
        )


@pytest.mark.parametrize(
    ("status", "retryable"),
    [(500, True), (503, True), (429, True), (408, True), (400, False), (401, False),
     (402, False), (404, False), (409, False), (422, False)],
)  # fmt: skip
async def test_a_refusal_is_retryable_for_5xx_429_and_408_only(serve, status, retryable) -> None:
    said = json.dumps({"message": f"no, not with {SECRET}"}).encode()
    url = await serve(answering(status, said))
    with pytest.raises(ProviderError) as refused:
        await _call(url)
    assert refused.value.code == "provider_error" and refused.value.retryable is retryable
    assert refused.value.message == f"Acme answered {status}: no, not with [secret]."


async def test_no_answer_is_retryable_and_named_by_its_class_only() -> None:
    with trio.socket.socket() as probe:  # a port nobody listens on
        await probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(ProviderError) as failed:
        await _call(f"http://127.0.0.1:{port}/x")
    assert failed.value.retryable
    assert failed.value.message == "Could not reach Acme (ConnectError)."


async def test_json_is_read_one_way(serve) -> None:
    assert await _call(await serve(answering(200, b'{"id": "x"}'))) == {"id": "x"}
    assert await _call(await serve(answering(200, b""))) == {}  # no body: nothing to read
    for not_an_object in (b"[1, 2]", b"<html>", b"\xff\xfe"):
        with pytest.raises(ProviderError) as failed:
            await _call(await serve(answering(200, not_an_object)))
        assert failed.value.retryable
        assert failed.value.message == "Acme answered with something that is not a JSON object."


async def test_an_answer_past_1_mib_is_not_read(serve) -> None:
    large = json.dumps({"message": "x" * calls.MAX_ANSWER}).encode()
    with pytest.raises(ProviderError) as failed:
        await _call(await serve(answering(200, large)))
    assert "not a JSON object" in failed.value.message
    with pytest.raises(ProviderError) as refused:
        await _call(await serve(answering(400, large)))
    assert refused.value.message == "Acme answered 400."  # its words were past the cap
    just = json.dumps({"id": "y" * (calls.MAX_ANSWER - 20)}).encode()
    assert len(just) <= calls.MAX_ANSWER
    assert (await _call(await serve(answering(200, just))))["id"].startswith("yyy")


async def test_an_answer_that_says_it_is_past_1_mib_is_not_read_at_all() -> None:
    size = calls.MAX_ANSWER + 1

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (message := await receive())["type"] != "lifespan.shutdown":
                await send({"type": message["type"] + ".complete"})
            return
        headers = [(b"content-length", str(size).encode())]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": b"x" * size})

    config = Config()
    config.bind, config.errorlog, config.accesslog = ["127.0.0.1:0"], None, None
    async with trio.open_nursery() as nursery:
        binds = await nursery.start(serve_hypercorn, app, config)
        with pytest.raises(ProviderError) as failed:
            await _call(binds[0])
        nursery.cancel_scope.cancel()
    assert "not a JSON object" in failed.value.message


async def test_an_answer_that_never_ends_is_read_no_further_than_the_cap() -> None:
    """A provider (or an address set in its place) that streams an endless answer: the call
    stops reading past ``MAX_ANSWER`` and answers, instead of reading until its time runs out
    (every chunk resets the read timeout)."""
    sent = 0

    async def app(scope: Any, receive: Any, send: Any) -> None:
        nonlocal sent
        if scope["type"] == "lifespan":
            while (message := await receive())["type"] != "lifespan.shutdown":
                await send({"type": message["type"] + ".complete"})
            return
        await send({"type": "http.response.start", "status": 200, "headers": []})
        chunk = b"x" * 65536
        while True:
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
            sent += len(chunk)

    config = Config()
    config.bind, config.errorlog, config.accesslog = ["127.0.0.1:0"], None, None
    async with trio.open_nursery() as nursery:
        binds = await nursery.start(serve_hypercorn, app, config)
        with trio.fail_after(bound(30)), pytest.raises(ProviderError) as failed:
            await _call(binds[0])
        nursery.cancel_scope.cancel()
    assert "not a JSON object" in failed.value.message
    assert sent < 16 * calls.MAX_ANSWER


async def test_a_long_message_is_cut_after_the_secret_is_hidden(serve) -> None:
    said = json.dumps({"message": "x" * 480 + SECRET + "y" * 100}).encode()
    with pytest.raises(ProviderError) as refused:
        await _call(await serve(answering(400, said)))
    assert len(refused.value.message) <= calls.MAX_MESSAGE
    assert refused.value.message.endswith(".") and "sk_test" not in refused.value.message


# --- every adapter's calls go through it --------------------------------------------------

# one refusal in each provider's own shape: Stripe reads error.message, Paddle error.code and
# error.detail, BTCPay message, PayPal name, details[].issue and message
REFUSAL = {
    "name": "REFUSED",
    "message": f"refused for {SECRET}",
    "details": [{"issue": "SOMETHING"}],
    "error": {"message": f"refused for {SECRET}", "code": "refused", "detail": f"for {SECRET}"},
}
NAMES = {"stripe": "Stripe", "paypal": "PayPal", "paddle": "Paddle", "btcpay": "BTCPay Server"}


def _credentials(name: str, url: str) -> dict[str, Any]:
    return {
        "stripe": {"secretKey": SECRET, "apiBase": url},
        "paypal": {"clientId": "c", "clientSecret": SECRET, "webhookId": "W", "apiBase": url},
        "paddle": {"apiKey": SECRET, "clientToken": "test_0123", "apiBase": url},
        "btcpay": {"serverUrl": url, "apiKey": SECRET, "storeId": "S"},
    }[name]


def _checkout(provider: Provider, url: str, http: httpx.AsyncClient) -> CheckoutRequest:
    tx = {
        "id": "tx_01JD0000000000000000000009",
        "kind": "payment",
        "amount": 1999,
        "currency": "EUR",
        "quantity": 1,
        "isTest": True,
        "createdAt": 1_790_000_000_000,
        "metadata": {},
    }
    return CheckoutRequest(
        tx=tx,
        product={"name": "A book"},
        credentials=_credentials(provider.name, url),
        success_url="https://shop.example/thanks",
        cancel_url="https://shop.example/cart",
        http=http,
        return_url="https://node.example/return",
    )


def refusing(status: int) -> Handler:
    async def handler(scope: dict[str, Any], received: bytes) -> tuple[int, bytes]:
        if scope["path"] == "/v1/oauth2/token":  # PayPal's token first, then the refusal
            return 200, json.dumps({"access_token": "A21", "expires_in": 3600}).encode()
        return status, json.dumps(REFUSAL).encode()

    return handler


@pytest.mark.parametrize("name", list(NAMES))
@pytest.mark.parametrize(
    ("status", "retryable"), [(422, False), (401, False), (503, True), (429, True)]
)
async def test_every_adapter_maps_a_refusal_the_same_way(serve, name, status, retryable) -> None:
    provider = PROVIDERS[name]
    url = await serve(refusing(status))
    async with httpx.AsyncClient() as http:
        with pytest.raises(ProviderError) as refused:
            await provider.create_checkout(_checkout(provider, url, http))
    message = refused.value.message
    assert message.startswith(f"{NAMES[name]} answered {status}: ")
    assert "refused" in message and SECRET not in message
    assert refused.value.retryable is retryable


@pytest.mark.parametrize("name", list(NAMES))
async def test_a_conflict_is_retried_only_where_the_provider_says_it_passes(serve, name) -> None:
    """Stripe answers 409 idempotency_key_in_use while a request with the same Idempotency-Key
    is still running (stripe.com/docs/api/idempotent_requests): a refund retried then must be
    retried again, not settled as refused. Elsewhere a 409 is a refusal."""
    provider = PROVIDERS[name]
    url = await serve(refusing(409))
    async with httpx.AsyncClient() as http:
        with pytest.raises(ProviderError) as refused:
            await provider.create_checkout(_checkout(provider, url, http))
    assert refused.value.retryable is (name == "stripe")


async def test_paypal_never_repeats_the_access_token_it_was_given(serve) -> None:
    """PayPal's calls carry a bearer token got with the client secret: a refusal that quotes it
    (an echo of the request, a proxy's page) says ``[secret]`` in its place, as for the client
    secret itself."""

    async def echoing(scope: dict[str, Any], received: bytes) -> tuple[int, bytes]:
        if scope["path"] == "/v1/oauth2/token":
            return 200, json.dumps({"access_token": "A21-token-xyz", "expires_in": 3600}).encode()
        return 422, json.dumps({"name": "REFUSED", "message": "bad A21-token-xyz"}).encode()

    provider = PROVIDERS["paypal"]
    url = await serve(echoing)
    async with httpx.AsyncClient() as http:
        with pytest.raises(ProviderError) as refused:
            await provider.create_checkout(_checkout(provider, url, http))
    assert "A21-token-xyz" not in refused.value.message
    assert "[secret]" in refused.value.message
