"""PayPal's official client (``paypal-server-sdk``), pointed at the simulator, makes the calls the
node makes (OAuth client credentials, create order with ``PayPal-Request-Id``, capture) and
parses the simulator's answers into its own models (PROVIDERS.md: the SDK run)."""

from __future__ import annotations

from functools import partial
from typing import Any

import httpx
import trio
from paypalserversdk.configuration import Environment, Server
from paypalserversdk.http.auth.o_auth_2 import ClientCredentialsAuthCredentials
from paypalserversdk.models.amount_with_breakdown import AmountWithBreakdown
from paypalserversdk.models.checkout_payment_intent import CheckoutPaymentIntent
from paypalserversdk.models.order_request import OrderRequest
from paypalserversdk.models.payment_source import PaymentSource
from paypalserversdk.models.paypal_wallet import PaypalWallet
from paypalserversdk.models.paypal_wallet_experience_context import (
    PaypalWalletExperienceContext,
)
from paypalserversdk.models.purchase_unit_request import PurchaseUnitRequest
from paypalserversdk.paypal_serversdk_client import PaypalServersdkClient

TX = "tx_01JD0000000000000000000001"


def _client(base: str) -> PaypalServersdkClient:
    client = PaypalServersdkClient(
        client_credentials_auth_credentials=ClientCredentialsAuthCredentials(
            o_auth_client_id="sdk-client", o_auth_client_secret="sdk-secret"
        ),
        environment=Environment.SANDBOX,
    )
    # the SDK's own switch for where it sends calls (PROVIDERS.md)
    client.config.environments[Environment.SANDBOX][Server.DEFAULT] = base
    return client


def _create(client: PaypalServersdkClient) -> Any:
    body = OrderRequest(
        intent=CheckoutPaymentIntent.CAPTURE,
        purchase_units=[
            PurchaseUnitRequest(
                amount=AmountWithBreakdown(currency_code="EUR", value="19.99"),
                custom_id=TX,
                invoice_id=TX,
            )
        ],
        payment_source=PaymentSource(
            paypal=PaypalWallet(
                experience_context=PaypalWalletExperienceContext(
                    return_url="https://shop.example/back", cancel_url="https://shop.example/cart"
                )
            )
        ),
    )
    return client.orders.create_order({"body": body, "paypal_request_id": TX})


def _capture(client: PaypalServersdkClient, order_id: str) -> Any:
    # an id of its own: PayPal keeps a request id across calls, and the create's would answer
    # with the stored create (https://developer.paypal.com/api/rest/reference/idempotency/)
    return client.orders.capture_order({"id": order_id, "paypal_request_id": f"{TX}-capture"})


async def test_the_official_client_creates_and_captures_an_order(paypal):
    # one client a step, so no kept-alive connection is reused across steps: once, on a loaded
    # machine, a capture on a reused connection got no answer within the SDK's 60 s
    created = await trio.to_thread.run_sync(partial(_create, _client(paypal.url)))
    assert created.status_code == 201
    order = created.body
    assert (order.status, order.intent) == ("PAYER_ACTION_REQUIRED", "CAPTURE")
    assert [link.rel for link in order.links] == ["self", "payer-action"]
    assert order.purchase_units[0].custom_id == TX
    replayed = await trio.to_thread.run_sync(partial(_create, _client(paypal.url)))
    assert (replayed.status_code, replayed.body.id) == (200, order.id)  # PayPal-Request-Id

    async with httpx.AsyncClient() as buyer:  # the buyer approves on the simulator's page
        page = next(link.href for link in order.links if link.rel == "payer-action")
        await buyer.post(page.split("?")[0], data={"token": order.id, "action": "approve"})

    captured = await trio.to_thread.run_sync(partial(_capture, _client(paypal.url), order.id))
    assert captured.status_code == 201
    capture = captured.body.purchase_units[0].payments.captures[0]
    assert (captured.body.status, capture.status) == ("COMPLETED", "COMPLETED")
    assert (capture.amount.currency_code, capture.amount.value) == ("EUR", "19.99")
    assert (capture.custom_id, capture.invoice_id) == (TX, TX)
    again = await trio.to_thread.run_sync(partial(_capture, _client(paypal.url), order.id))
    assert (again.status_code, again.body.purchase_units[0].payments.captures[0].id) == (
        200,
        capture.id,
    )
    assert paypal.capture_count(order.id) == 1
