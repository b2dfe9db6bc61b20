"""The PayPal adapter against the simulator, for what the end-to-end flows do not reach: an order
already captured under another request id is read and reported as the same capture; the mode
is the one whose webhook id the delivery was signed for; a refused client id says so."""

from __future__ import annotations

import json

import httpx
import pytest

from edge.domain.events import EventType
from edge.errors import ProviderError
from edge.providers.base import CheckoutRequest, Delivery, FollowUp, FollowUpRequest
from edge.providers.paypal import PAYPAL

TX = "tx_01JD0000000000000000000002"


def _tx() -> dict[str, object]:
    return {
        "id": TX,
        "kind": "payment",
        "amount": 1999,
        "currency": "EUR",
        "isTest": True,
        "createdAt": 1_790_000_000_000,
        "metadata": {},
    }


async def test_an_order_captured_under_another_request_id_is_read_and_reported(paypal):
    credentials = {
        "clientId": "adapter",
        "clientSecret": "secret",
        "webhookId": "W",
        "apiBase": paypal.url,
    }
    async with httpx.AsyncClient() as http:
        started = await PAYPAL.create_checkout(
            CheckoutRequest(
                tx=_tx(),
                product={"name": "A book"},
                credentials=credentials,
                success_url="https://shop.example/thanks",
                cancel_url="https://shop.example/cart",
                http=http,
                return_url="https://node.example/return/paypal/p/t",
            )
        )
        order_id = started.provider_ref
        assert order_id and started.expires_at_ms == 1_790_000_000_000 + 3 * 3600 * 1000
        await http.post(f"{paypal.url}/checkoutnow", data={"token": order_id, "action": "approve"})
        token = (
            await http.post(
                f"{paypal.url}/v1/oauth2/token",
                auth=("adapter", "secret"),
                data={"grant_type": "client_credentials"},
            )
        ).json()["access_token"]
        elsewhere = await http.post(
            f"{paypal.url}/v2/checkout/orders/{order_id}/capture",
            headers={"Authorization": f"Bearer {token}", "PayPal-Request-Id": "someone-else"},
        )
        capture_id = elsewhere.json()["purchase_units"][0]["payments"]["captures"][0]["id"]

        tx = {**_tx(), "providerRef": order_id}
        result = await PAYPAL.follow_up(
            FollowUpRequest(FollowUp("capture", {"orderId": order_id}), tx, credentials, http)
        )
    (event,) = result.events
    assert result.done and (event.type, event.tx_id) == (EventType.PAYMENT_SUCCEEDED, TX)
    assert event.dedup_ids == (f"capture:{capture_id}:COMPLETED",)
    assert paypal.capture_count(order_id) == 1


async def test_the_mode_is_the_one_whose_webhook_id_signed(paypal):
    body = json.dumps({"id": "WH-1", "event_type": "X", "resource": {}}).encode()
    headers = {k.lower(): v for k, v in paypal.sign_headers("LIVE-WEBHOOK", body).items()}
    credentials = {
        "test": {"webhookId": "TEST-WEBHOOK", "certHosts": ["127.0.0.1"]},
        "live": {"webhookId": "LIVE-WEBHOOK", "certHosts": ["127.0.0.1"]},
    }
    async with httpx.AsyncClient() as http:
        assert (
            await PAYPAL.verify_webhook(Delivery(headers, body, credentials, 0.0, http)) == "live"
        )


async def test_a_refused_client_id_is_a_provider_error_that_says_so(paypal):
    credentials = {
        "clientId": "adapter",
        "clientSecret": "secret",
        "webhookId": "W",
        "apiBase": paypal.url,
    }
    paypal.register_webhook("adapter", "the real secret", "http://127.0.0.1:9/")
    async with httpx.AsyncClient() as http:
        with pytest.raises(ProviderError) as refused:
            await PAYPAL.create_checkout(
                CheckoutRequest(
                    _tx(), {"name": "A book"}, credentials, "https://s/t", "https://s/c", http
                )
            )
    assert refused.value.message == "PayPal refused the client id and secret."
