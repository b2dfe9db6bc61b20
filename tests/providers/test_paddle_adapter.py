"""The Paddle adapter against the simulator: the transaction it makes (a non-catalog price in
minor-unit strings, the txId in custom_data), the token answer, the portal for the
subscription's Paddle customer, and Paddle's refusals reported without the API key."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from typing import Any

import httpx
import pytest
import trio
from support.asgi import serve_asgi

from edge.errors import Conflict, ProviderError
from edge.providers.base import CheckoutRequest, PortalRequest
from edge.providers.paddle import PADDLE

TX = "tx_01JD0000000000000000000002"
KEY = "pdl_sdbx_apikey_01jd0000000000000000000000_secretpart"


def tx(**changes: Any) -> dict[str, Any]:
    return {
        "id": TX,
        "kind": "payment",
        "amount": 3000,
        "currency": "EUR",
        "quantity": 3,
        "isTest": True,
        "createdAt": int(time.time() * 1000),  # (a checkout taken up again lists from it)
        "customerRef": "cust-9",
        "metadata": {"order": "A-17"},
        **changes,
    }


def credentials(base: str) -> dict[str, str]:
    return {
        "apiKey": KEY,
        "clientToken": "test_0123456789abcdef",
        "webhookSecret": "s",
        "apiBase": base,
    }


def request(base: str, http: httpx.AsyncClient, **changes: Any) -> CheckoutRequest:
    return CheckoutRequest(
        tx=tx(**changes),
        product={"name": "A book"},
        credentials=credentials(base),
        success_url="https://shop.example/thanks",
        cancel_url="https://shop.example/cart",
        http=http,
    )


async def test_a_checkout_is_a_transaction_whose_id_is_the_token(paddle):
    async with httpx.AsyncClient() as http:
        result = await PADDLE.create_checkout(request(paddle.url, http))
    txn_id = result.provider_ref
    assert txn_id and txn_id.startswith("txn_")
    assert result.fields == {"token": txn_id, "publishableKey": "test_0123456789abcdef"}
    assert result.expires_at_ms is None
    made = paddle.transaction(txn_id)
    assert made["custom_data"] == {"order": "A-17", "txId": TX, "customerRef": "cust-9"}
    (item,) = made["items"]
    assert item["quantity"] == 3  # 3000 splits into 3 x 1000
    assert item["price"]["unit_price"] == {"amount": "1000", "currency_code": "EUR"}
    assert item["price"]["billing_cycle"] is None
    assert made["details"]["totals"]["grand_total"] == "3000"
    assert paddle.transaction_of(TX) == txn_id


def _made_for_tx(paddle: Any) -> list[str]:
    return [
        txn_id
        for account in paddle._accounts.values()  # noqa: SLF001
        for txn_id, txn in account.transactions.items()
        if (txn.get("custom_data") or {}).get("txId") == TX
    ]


async def test_a_checkout_taken_up_again_adopts_the_transaction_made_before(paddle):
    """CONTRACT 4.2: a key's retry after its first request was cut short (a crash, a lease
    handed over) makes no second provider object. Paddle honours no idempotency key: the
    adapter asks for the API's transactions made since the checkout and adopts its own."""
    async with httpx.AsyncClient() as http:
        first = await PADDLE.create_checkout(request(paddle.url, http))
        again = await PADDLE.create_checkout(replace(request(paddle.url, http), again=True))
        assert again == first
        assert _made_for_tx(paddle) == [first.provider_ref]
        # nothing made before: it is made now
        other = await PADDLE.create_checkout(
            replace(request(paddle.url, http, id="tx_01JD0000000000000000000003"), again=True)
        )
    assert other.provider_ref != first.provider_ref


async def test_a_transaction_a_paddle_js_checkout_made_naming_the_checkout_is_not_adopted(
    paddle,
):
    """Anyone with the page's client-side token may open a Paddle.js checkout carrying any
    custom data (origin ``web``): it is not the checkout's transaction."""
    token = paddle.register_client_token(KEY)
    price = paddle.create_price(KEY, "Tip", 100, "EUR")
    web = await paddle.checkout_open(token, items=[{"priceId": price}], custom_data={"txId": TX})
    async with httpx.AsyncClient() as http:
        made = await PADDLE.create_checkout(replace(request(paddle.url, http), again=True))
    assert made.provider_ref != web
    assert sorted(_made_for_tx(paddle)) == sorted([web, made.provider_ref])


async def test_a_transaction_made_before_is_found_past_a_page_and_not_adopted_once_canceled(
    paddle,
):
    """Paddle lists at most 30 transactions a page: the one the first request made is found
    past the account's others made in the minutes around it; once canceled, a new one is
    made."""
    async with httpx.AsyncClient() as http:
        for n in range(35):  # other checkouts of the account, made just before
            await PADDLE.create_checkout(
                request(paddle.url, http, id=f"tx_01JD000000000000000001{n:04d}")
            )
        first = await PADDLE.create_checkout(request(paddle.url, http))
        again = await PADDLE.create_checkout(replace(request(paddle.url, http), again=True))
        assert again.provider_ref == first.provider_ref
        assert first.provider_ref is not None
        await paddle.cancel_transaction(first.provider_ref)
        anew = await PADDLE.create_checkout(replace(request(paddle.url, http), again=True))
    assert anew.provider_ref not in (first.provider_ref, None)


async def test_amounts_that_do_not_split_go_as_one_line_and_yen_is_whole(paddle):
    async with httpx.AsyncClient() as http:
        result = await PADDLE.create_checkout(
            request(paddle.url, http, amount=1000, currency="JPY")
        )
    (item,) = paddle.transaction(result.provider_ref)["items"]
    assert item["quantity"] == 1
    assert item["price"]["unit_price"] == {"amount": "1000", "currency_code": "JPY"}


async def test_a_subscription_checkout_carries_its_billing_cycle(paddle):
    async with httpx.AsyncClient() as http:
        result = await PADDLE.create_checkout(
            request(paddle.url, http, kind="subscription", interval="year", quantity=1)
        )
    (item,) = paddle.transaction(result.provider_ref)["items"]
    assert item["price"]["billing_cycle"] == {"interval": "year", "frequency": 1}


async def test_a_currency_paddle_does_not_take_is_refused_before_any_call(paddle):
    async with httpx.AsyncClient() as http:
        with pytest.raises(Conflict) as caught:
            await PADDLE.create_checkout(request(paddle.url, http, currency="KWD"))
    assert caught.value.code == "amount_not_supported"


async def test_failures_are_provider_errors_that_never_name_the_key(paddle):
    async def refuse(scope: dict[str, Any], body: bytes) -> tuple[int, bytes]:
        error = {
            "type": "request_error",
            "code": "forbidden",
            "detail": f"The key {KEY} may not do this",
            "documentation_url": "https://developer.paddle.com/errors/shared/forbidden",
        }
        return 403, json.dumps({"error": error, "meta": {"request_id": "r"}}).encode()

    async with httpx.AsyncClient() as http, trio.open_nursery() as nursery:
        refusing = await nursery.start(serve_asgi, refuse)
        with pytest.raises(ProviderError) as caught:
            await PADDLE.create_checkout(request(refusing, http))
        assert isinstance(caught.value, ProviderError) and caught.value.code == "provider_error"
        assert "forbidden" in caught.value.message and KEY not in caught.value.message
        assert not caught.value.retryable  # a refusal is not cured by asking again

        paddle.fail_next_requests = 1
        with pytest.raises(ProviderError) as caught:
            await PADDLE.create_checkout(request(paddle.url, http))
        assert "503" in caught.value.message and caught.value.retryable

        with pytest.raises(ProviderError) as caught:
            await PADDLE.create_checkout(request("http://127.0.0.1:9", http))
        assert caught.value.message.startswith("Could not reach Paddle")
        nursery.cancel_scope.cancel()


async def test_the_portal_is_a_session_for_the_subscriptions_customer(paddle):
    async with httpx.AsyncClient() as http:
        result = await PADDLE.create_checkout(
            request(paddle.url, http, kind="subscription", interval="month", quantity=1)
        )
        await paddle.pay(result.provider_ref)
        sub_id = paddle.subscription_of(TX)
        customer = paddle.subscription(sub_id)["customer_id"]
        record = {"providerCustomer": customer, "providerRef": sub_id}
        portal = await PADDLE.portal_url(
            PortalRequest(record, credentials(paddle.url), "https://shop.example/account", http)
        )
        page = await http.get(portal.url)
        assert page.status_code == 200 and sub_id in page.text

        with pytest.raises(Conflict) as refused:
            await PADDLE.portal_url(
                PortalRequest({"providerRef": sub_id}, credentials(paddle.url), "", http)
            )
        assert refused.value.code == "portal_unsupported"

        with pytest.raises(ProviderError) as unknown:
            await PADDLE.portal_url(
                PortalRequest(
                    {"providerCustomer": "ctm_01jd0000000000000000000000", "providerRef": sub_id},
                    credentials(paddle.url),
                    "",
                    http,
                )
            )
        assert "404" in unknown.value.message


@pytest.mark.parametrize(
    ("test", "host"), [(True, "sandbox-api.paddle.com"), (False, "api.paddle.com")]
)
async def test_without_an_api_base_test_mode_goes_to_the_sandbox(test, host):
    called: list[httpx.URL] = []

    def paddle_answers(sent: httpx.Request) -> httpx.Response:
        called.append(sent.url)
        return httpx.Response(200, json={"data": {"id": "txn_01h0000000000000000000000a"}})

    async with httpx.AsyncClient(transport=httpx.MockTransport(paddle_answers)) as http:
        checkout = request("", http, isTest=test)
        result = await PADDLE.create_checkout(checkout)
    assert result.fields["token"] == "txn_01h0000000000000000000000a"
    assert [(u.host, u.path) for u in called] == [(host, "/transactions")]
