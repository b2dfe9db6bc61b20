"""The PayPal simulator's request ids and money, as PayPal documents them (HTTP against the
simulator; the node's side is in tests/e2e/test_paypal_browser_orders.py and
tests/e2e/test_paypal_flow.py).

- "when you include a previously specified PayPal-Request-Id header in a request, PayPal returns
  the latest status of the previous request that used that same header"
  (https://developer.paypal.com/api/rest/reference/idempotency/): the ids are kept across calls,
  not per endpoint; a replay answers 200, "A successful response to an idempotent request"
  (checkout_orders_v2.json, responses of POST /v2/checkout/orders and of its capture);
- ``money.value``: a string of at most 32 characters matching
  ``^((-?[0-9]+)|(-?([0-9]+)?[.][0-9]+))$`` (checkout_orders_v2.json components.schemas.money);
  ``DECIMAL_PRECISION`` "If the currency supports decimals, only two decimal place precision is
  supported."; ``MAX_VALUE_EXCEEDED`` "Should be less than or equal to 999999999999999.99."
  (the 422 issues of the same document); HUF, JPY and TWD: "This currency does not support
  decimals. If you pass a decimal amount, an error occurs."
  (https://developer.paypal.com/docs/api/reference/currency-codes/), issue
  ``DECIMALS_NOT_SUPPORTED`` "Adjust the amount to match the number of decimal places the
  currency supports." (https://developer.paypal.com/api/rest/integration/orders-api/
  troubleshooting; its description in payments_payment_v2.json);
- ``DUPLICATE_INVOICE_ID``: "your account setting requires that Invoice Id be unique for each
  transaction" (checkout_orders_v2.json 422, orders.capture-422): a capture is the transaction.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from edge.sim.paypal import PayPalSimulator

TX = "tx_01JD0000000000000000000007"
CONTEXT = {"return_url": "https://shop.example/back", "cancel_url": "https://shop.example/cart"}


class Api:
    def __init__(self, sim: PayPalSimulator, http: httpx.AsyncClient) -> None:
        self.sim, self.http, self.token = sim, http, ""

    async def __call__(
        self, method: str, path: str, body: Any = None, request_id: str | None = None
    ) -> httpx.Response:
        if not self.token:
            answer = await self.http.post(
                f"{self.sim.url}/v1/oauth2/token",
                auth=("client", "secret"),
                data={"grant_type": "client_credentials"},
            )
            self.token = answer.json()["access_token"]
        headers = {"Authorization": f"Bearer {self.token}"}
        if request_id:
            headers["PayPal-Request-Id"] = request_id
        return await self.http.request(method, f"{self.sim.url}{path}", json=body, headers=headers)


@pytest.fixture
async def api(paypal: PayPalSimulator) -> AsyncIterator[Api]:
    async with httpx.AsyncClient() as http:
        yield Api(paypal, http)


def order(value: str = "19.99", currency: str = "EUR", invoice: str | None = TX) -> dict[str, Any]:
    unit: dict[str, Any] = {"custom_id": TX, "amount": {"currency_code": currency, "value": value}}
    if invoice:
        unit["invoice_id"] = invoice
    return {
        "intent": "CAPTURE",
        "purchase_units": [unit],
        "payment_source": {"paypal": {"experience_context": CONTEXT}},
    }


async def approve(sim: PayPalSimulator, order_id: str) -> None:
    async with httpx.AsyncClient() as buyer:
        back = await buyer.post(
            f"{sim.url}/checkoutnow", data={"token": order_id, "action": "approve"}
        )
    assert back.status_code == 303


def issue(answer: httpx.Response) -> tuple[int, str]:
    return answer.status_code, answer.json()["details"][0]["issue"]


# --- PayPal-Request-Id --------------------------------------------------------------------


async def test_a_capture_with_the_creates_request_id_gets_the_create_back(api, paypal):
    made = await api("POST", "/v2/checkout/orders", order(), request_id=TX)
    assert made.status_code == 201
    order_id = made.json()["id"]
    await approve(paypal, order_id)
    same_id = await api("POST", f"/v2/checkout/orders/{order_id}/capture", {}, request_id=TX)
    assert same_id.status_code == 200 and same_id.json() == made.json()  # the stored create
    assert paypal.capture_count(order_id) == 0
    assert not [e for e, _, _ in paypal.delivered if e["event_type"].startswith("PAYMENT.")]

    own = await api("POST", f"/v2/checkout/orders/{order_id}/capture", {}, f"{TX}-capture")
    assert (own.status_code, own.json()["status"]) == (201, "COMPLETED")
    again = await api("POST", f"/v2/checkout/orders/{order_id}/capture", {}, f"{TX}-capture")
    assert (again.status_code, again.json()) == (200, own.json())  # one capture
    other = await api("POST", f"/v2/checkout/orders/{order_id}/capture", {}, "another")
    assert issue(other) == (422, "ORDER_ALREADY_CAPTURED")
    assert paypal.capture_count(order_id) == 1


async def test_request_ids_are_the_apps_across_every_call(api, paypal):
    """A product made with an id: an order sent with the same id gets the product back."""
    product = await api("POST", "/v1/catalogs/products", {"name": "Pro"}, request_id="k-1")
    assert product.status_code == 201
    replay = await api("POST", "/v2/checkout/orders", order(), request_id="k-1")
    assert (replay.status_code, replay.json()) == (200, product.json())
    assert (await api("GET", f"/v2/checkout/orders/{product.json()['id']}")).status_code == 404


async def test_a_refused_request_keeps_no_request_id(api, paypal):
    refused = await api("POST", "/v2/checkout/orders", order("19.999"), request_id="k-2")
    assert issue(refused) == (422, "DECIMAL_PRECISION")
    made = await api("POST", "/v2/checkout/orders", order("19.99"), request_id="k-2")
    assert made.status_code == 201
    early = await api("POST", f"/v2/checkout/orders/{made.json()['id']}/capture", {}, "k-3")
    assert issue(early) == (422, "ORDER_NOT_APPROVED")
    await approve(paypal, made.json()["id"])
    late = await api("POST", f"/v2/checkout/orders/{made.json()['id']}/capture", {}, "k-3")
    assert late.status_code == 201 and late.json()["status"] == "COMPLETED"


async def test_a_refund_is_made_once_per_request_id(api, paypal):
    made = (await api("POST", "/v2/checkout/orders", order())).json()
    await approve(paypal, made["id"])
    captured = (await api("POST", f"/v2/checkout/orders/{made['id']}/capture", {})).json()
    capture_id = captured["purchase_units"][0]["payments"]["captures"][0]["id"]
    part = {"amount": {"currency_code": "EUR", "value": "5.00"}}
    first = await api("POST", f"/v2/payments/captures/{capture_id}/refund", part, "r-1")
    again = await api("POST", f"/v2/payments/captures/{capture_id}/refund", part, "r-1")
    assert (first.status_code, again.status_code) == (201, 200)
    assert first.json() == again.json()
    breakdown = first.json()["seller_payable_breakdown"]
    assert breakdown["total_refunded_amount"]["value"] == "5.00"


# --- money ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "currency", "expected"),
    [
        ("19.999", "EUR", (422, "DECIMAL_PRECISION")),
        ("0.001", "USD", (422, "DECIMAL_PRECISION")),
        ("1000.5", "HUF", (422, "DECIMALS_NOT_SUPPORTED")),
        ("100.00", "JPY", (422, "DECIMALS_NOT_SUPPORTED")),
        ("30.0", "TWD", (422, "DECIMALS_NOT_SUPPORTED")),
        ("1000000000000000.00", "EUR", (422, "MAX_VALUE_EXCEEDED")),
        ("0.00", "EUR", (422, "CANNOT_BE_ZERO_OR_NEGATIVE")),
        ("1,00", "EUR", (400, "INVALID_PARAMETER_SYNTAX")),
        ("1" * 33, "EUR", (400, "INVALID_PARAMETER_SYNTAX")),
        ("10.00", "BHD", (422, "CURRENCY_NOT_SUPPORTED")),
    ],
)
async def test_amounts_paypal_refuses(api, value, currency, expected):
    answer = await api("POST", "/v2/checkout/orders", order(value, currency))
    assert issue(answer) == expected, answer.text
    detail = answer.json()["details"][0]
    assert detail["field"].endswith(("/value", "/currency_code")) and detail["location"] == "body"


@pytest.mark.parametrize(
    ("value", "currency"),
    [("19.9", "EUR"), ("19", "EUR"), (".50", "USD"), ("100", "JPY"), ("999999999999999.99", "EUR")],
)
async def test_amounts_paypal_takes(api, value, currency):
    answer = await api("POST", "/v2/checkout/orders", order(value, currency, invoice=None))
    assert answer.status_code == 201, answer.text
    assert answer.json()["purchase_units"][0]["amount"]["value"] == value


async def test_a_refund_amount_follows_the_same_rules(api, paypal):
    made = (await api("POST", "/v2/checkout/orders", order("1000", "HUF"))).json()
    await approve(paypal, made["id"])
    captured = (await api("POST", f"/v2/checkout/orders/{made['id']}/capture", {})).json()
    capture_id = captured["purchase_units"][0]["payments"]["captures"][0]["id"]
    refund = f"/v2/payments/captures/{capture_id}/refund"
    decimals = {"amount": {"currency_code": "HUF", "value": "10.50"}}
    assert issue(await api("POST", refund, decimals)) == (422, "DECIMALS_NOT_SUPPORTED")
    whole = await api("POST", refund, {"amount": {"currency_code": "HUF", "value": "10"}})
    assert whole.status_code == 201
    assert whole.json()["seller_payable_breakdown"]["total_refunded_amount"]["value"] == "10"


# --- invoice ids --------------------------------------------------------------------------


async def test_an_invoice_id_is_unique_per_transaction(api, paypal):
    """Two orders may carry one invoice id; once one of them is captured (a transaction), the
    other is refused at capture, and a new order with it at create."""
    first = (await api("POST", "/v2/checkout/orders", order())).json()
    second = (await api("POST", "/v2/checkout/orders", order())).json()
    for made in (first, second):
        await approve(paypal, made["id"])
    captured = await api("POST", f"/v2/checkout/orders/{first['id']}/capture", {})
    assert captured.status_code == 201
    refused = await api("POST", f"/v2/checkout/orders/{second['id']}/capture", {})
    assert issue(refused) == (422, "DUPLICATE_INVOICE_ID")
    assert paypal.capture_count(second["id"]) == 0
    assert issue(await api("POST", "/v2/checkout/orders", order())) == (
        422,
        "DUPLICATE_INVOICE_ID",
    )
