"""The Paddle simulator on its own: accounts by API key, Paddle-Version, Paddle's envelopes and
refusals, the card form's Pay, Decline and Close, and notifications as Paddle sends them
(signed per attempt, a new notification_id per delivery and the same event_id), which the
Paddle adapter verifies and normalizes to the table's types; and the events ``edge trigger``
builds."""

from __future__ import annotations

import json
import re
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from support.asgi import serving

from edge.domain.events import EventType as E
from edge.providers.base import Delivery
from edge.providers.paddle import PADDLE
from edge.providers.paddle.events import normalize
from edge.sim.paddle import SUPPORTED_TRIGGERS, PaddleSimulator, event_for_trigger
from edge.sim.paddle.objects import body_of
from edge.sim.paddle.server import PaddleError

TX = "tx_01JD0000000000000000000001"
KEY = "pdl_sdbx_apikey_sim"
ID = re.compile(r"(evt|ntf|txn|sub|ctm|adj|pri|pro|add|cpls)_[a-z0-9]{26}")


class Receiver:
    """A notification destination that keeps what it gets; answers ``statuses`` in turn, then
    200."""

    def __init__(self) -> None:
        self.got: list[tuple[dict[str, str], bytes]] = []
        self.statuses: list[int] = []

    async def __call__(self, scope: dict[str, Any], body: bytes) -> tuple[int, bytes]:
        self.got.append(({k.decode().lower(): v.decode() for k, v in scope["headers"]}, body))
        return (self.statuses.pop(0) if self.statuses else 200), b""

    def events(self) -> list[dict[str, Any]]:
        return [json.loads(body) for _, body in self.got]

    def types(self) -> list[str]:
        return [e["event_type"] for e in self.events()]


@pytest.fixture
async def receiver() -> AsyncIterator[tuple[Receiver, str]]:
    app = Receiver()
    async with serving(app) as url:
        yield app, url


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient() as client:
        yield client


def headers(key: str = KEY) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}", "Paddle-Version": "1"}


def transaction_body(
    amount: str = "1999", currency: str = "EUR", cycle: dict[str, Any] | None = None
) -> dict[str, Any]:
    price: dict[str, Any] = {
        "description": "Plan",
        "name": "Plan",
        "unit_price": {"amount": amount, "currency_code": currency},
        "product": {"name": "Plan", "tax_category": "standard"},
    }
    if cycle:
        price["billing_cycle"] = cycle
    return {
        "items": [{"quantity": 1, "price": price}],
        "currency_code": currency,
        "custom_data": {"txId": TX, "customerRef": "cust-1"},
    }


async def create(http: httpx.AsyncClient, sim: PaddleSimulator, **kwargs: Any) -> str:
    answer = await http.post(
        f"{sim.url}/transactions", json=transaction_body(**kwargs), headers=headers()
    )
    assert answer.status_code == 201, answer.text
    return str(answer.json()["data"]["id"])


async def test_transactions_are_made_and_read_in_paddles_envelope(http, paddle):
    answer = await http.post(
        f"{paddle.url}/transactions", json=transaction_body(), headers=headers()
    )
    assert answer.status_code == 201
    made = answer.json()
    assert set(made) == {"data", "meta"} and made["meta"]["request_id"]
    data = made["data"]
    assert ID.fullmatch(data["id"]) and data["id"].startswith("txn_")
    assert (data["status"], data["origin"], data["customer_id"]) == ("draft", "api", None)
    assert data["checkout"]["url"] == f"{paddle.url}/pay?_ptxn={data['id']}"
    assert data["custom_data"] == {"txId": TX, "customerRef": "cust-1"}
    price = data["items"][0]["price"]
    assert ID.fullmatch(price["id"]) and ID.fullmatch(price["product_id"])
    read = await http.get(f"{paddle.url}/transactions/{data['id']}", headers=headers())
    assert read.status_code == 200 and read.json()["data"] == data
    elsewhere = await http.get(f"{paddle.url}/transactions/{data['id']}", headers=headers("other"))
    assert (elsewhere.status_code, elsewhere.json()["error"]["code"]) == (404, "not_found")


async def test_calls_need_a_bearer_key_and_paddle_version_1(http, paddle):
    url = f"{paddle.url}/transactions"
    bare = await http.post(url, json=transaction_body(), headers={"Paddle-Version": "1"})
    assert (bare.status_code, bare.json()["error"]["code"]) == (401, "authentication_missing")
    unversioned = await http.post(
        url, json=transaction_body(), headers={"Authorization": "Bearer k"}
    )
    assert unversioned.status_code == 400
    assert unversioned.json()["error"]["code"] == "invalid_paddle_version"
    assert set(unversioned.json()["error"]) == {"type", "code", "detail", "documentation_url"}


@pytest.mark.parametrize(
    "body",
    [
        {"items": []},
        transaction_body(amount="19.99"),  # amounts are integer strings
        transaction_body(currency="KWD"),
        {**transaction_body(), "currency_code": "USD"},  # the price is in EUR
        {"items": [{"quantity": 1, "price_id": "pri_01gsz8x8sawmvhz1pv30nge1ke"}]},
        {"items": [{"quantity": 0, "price": transaction_body()["items"][0]["price"]}]},
        transaction_body(cycle={"interval": "fortnight", "frequency": 1}),
        {**transaction_body(), "custom_data": "txId"},
    ],
)
async def test_what_paddle_refuses(http, paddle, body):
    refused = await http.post(f"{paddle.url}/transactions", json=body, headers=headers())
    assert refused.status_code in (400, 404), refused.text
    assert refused.json()["error"]["type"] == "request_error"


async def test_paying_a_subscription_notifies_in_paddles_order_and_form(http, paddle, receiver):
    app, url = receiver
    secret = paddle.register_destination(KEY, url)
    txn_id = await create(http, paddle, cycle={"interval": "month", "frequency": 1})
    page = await http.get(f"{paddle.url}/pay", params={"_ptxn": txn_id})
    assert page.status_code == 200 and "Pay" in page.text and "19.99 EUR / month" in page.text
    paid = await http.post(
        f"{paddle.url}/checkout/{txn_id}",
        data={"action": "pay", "success_url": "https://shop.example/thanks"},
    )
    assert (paid.status_code, paid.headers["location"]) == (303, "https://shop.example/thanks")
    assert app.types() == [
        "transaction.created",
        "transaction.paid",
        "subscription.created",
        "subscription.activated",
        "transaction.completed",
    ]
    sub_id = paddle.subscription_of(TX)
    credentials = {"test": {"webhookSecret": secret}}
    normalized = []
    async with httpx.AsyncClient() as unused:
        for got_headers, body in app.got:
            signature = got_headers["paddle-signature"]
            assert re.fullmatch(r"ts=\d+;h1=[0-9a-f]{64}", signature)
            assert (
                await PADDLE.verify_webhook(
                    Delivery(got_headers, body, credentials, time.time(), unused)
                )
                == "test"
            )
            event = json.loads(body)
            assert list(event) == [
                "data",
                "event_id",
                "event_type",
                "occurred_at",
                "notification_id",
            ]
            assert body == body_of(event)  # compact, as Paddle sends
            assert ID.fullmatch(event["event_id"]) and ID.fullmatch(event["notification_id"])
            normalized.append(normalize(body))
    assert [n.type for n in normalized] == [
        E.CHECKOUT_CREATED,
        E.PAYMENT_SUCCEEDED,
        E.SUBSCRIPTION_CREATED,
        E.SUBSCRIPTION_UPDATED,
        E.PAYMENT_SUCCEEDED,
    ]
    assert {n.tx_id for n in normalized} == {TX}
    paid_event, completed = app.events()[1], app.events()[4]
    assert paid_event["data"]["subscription_id"] is None  # "might not yet" be set
    assert completed["data"]["subscription_id"] == sub_id
    assert completed["data"]["status"] == "completed" and completed["data"]["customer_id"]
    assert normalized[4].starts_subscription and normalized[2].starts_subscription


async def test_decline_keeps_the_checkout_open_and_close_does_nothing(http, paddle, receiver):
    app, url = receiver
    paddle.register_destination(KEY, url)
    txn_id = await create(http, paddle)
    declined = await http.post(f"{paddle.url}/checkout/{txn_id}", data={"action": "decline"})
    assert declined.status_code == 200 and "declined" in declined.text
    assert app.types() == ["transaction.created", "transaction.payment_failed"]
    failed = app.events()[1]["data"]
    assert failed["status"] == "ready" and failed["payments"][0]["error_code"] == "declined"
    assert normalize(app.got[1][1]).type == E.PAYMENT_ATTEMPT_FAILED
    closed = await http.post(
        f"{paddle.url}/checkout/{txn_id}",
        data={"action": "close", "close_url": "https://shop.example/c"},
    )
    assert (closed.status_code, closed.headers["location"]) == (303, "https://shop.example/c")
    assert len(app.got) == 2 and paddle.transaction(txn_id)["status"] == "ready"
    await paddle.pay(txn_id)  # another card goes through
    assert app.types()[2:] == ["transaction.paid", "transaction.completed"]


async def test_each_attempt_is_signed_afresh_and_a_replay_is_a_new_notification(
    http, paddle, receiver
):
    app, url = receiver
    secret = paddle.register_destination(KEY, url, secret="pdl_ntfset_fixed")
    app.statuses = [500]
    txn_id = await create(http, paddle)
    (first, second) = app.got
    assert first[1] == second[1]  # a retry of one notification: the same body
    assert paddle.delivered[-1][2] == 200
    event = json.loads(first[1])
    await paddle.redeliver(event["event_id"])
    replay = json.loads(app.got[2][1])
    assert replay["event_id"] == event["event_id"]
    assert replay["notification_id"] != event["notification_id"]
    assert replay["data"] == event["data"]
    # signed with the destination's secret when sent, not when the event was made
    async with httpx.AsyncClient() as unused:
        for got_headers, body in app.got:
            mode = await PADDLE.verify_webhook(
                Delivery(
                    got_headers, body, {"live": {"webhookSecret": secret}}, time.time(), unused
                )
            )
            assert mode == "live"
    assert txn_id


async def test_renewals_refunds_chargebacks_and_the_subscriptions_life(http, paddle, receiver):
    app, url = receiver
    paddle.register_destination(KEY, url)
    txn_id = await create(http, paddle, cycle={"interval": "month", "frequency": 1})
    await paddle.pay(txn_id)
    sub_id = paddle.subscription_of(TX)
    period = paddle.subscription(sub_id)["current_billing_period"]["ends_at"]
    seen = len(app.got)

    def since() -> list[tuple[str, E]]:
        nonlocal seen
        out = [(json.loads(b)["event_type"], normalize(b).type) for _, b in app.got[seen:]]
        seen = len(app.got)
        return out

    renewal = await paddle.renew(sub_id)
    assert since() == [
        ("transaction.paid", E.SUBSCRIPTION_PAYMENT_SUCCEEDED),
        ("transaction.completed", E.SUBSCRIPTION_PAYMENT_SUCCEEDED),
        ("subscription.updated", E.SUBSCRIPTION_UPDATED),
    ]
    renewed = paddle.transaction(renewal)
    assert renewed["origin"] == "subscription_recurring" and renewed["custom_data"]["txId"] == TX
    assert renewed["billing_period"]["starts_at"] == period
    assert paddle.subscription(sub_id)["current_billing_period"]["starts_at"] == period

    await paddle.fail_renewal(sub_id)
    assert since() == [
        ("transaction.payment_failed", E.SUBSCRIPTION_PAYMENT_FAILED),
        ("transaction.past_due", E.SUBSCRIPTION_PAYMENT_FAILED),
        ("subscription.past_due", E.SUBSCRIPTION_PAST_DUE),
    ]
    await paddle.pause_subscription(sub_id)
    await paddle.resume_subscription(sub_id)
    await paddle.cancel_subscription(sub_id)
    assert since() == [
        ("subscription.paused", E.SUBSCRIPTION_UPDATED),
        ("subscription.resumed", E.SUBSCRIPTION_UPDATED),
        ("subscription.canceled", E.SUBSCRIPTION_CANCELED),
    ]

    await paddle.refund(txn_id, 500)
    assert since() == [
        ("adjustment.created", E.UNMATCHED),  # waiting for Paddle's approval
        ("adjustment.updated", E.PAYMENT_PARTIALLY_REFUNDED),
    ]
    with pytest.raises(ValueError):
        await paddle.refund(txn_id, 1500)  # 1499 left
    await paddle.refund(txn_id)
    assert since()[1] == ("adjustment.updated", E.PAYMENT_REFUNDED)
    await paddle.chargeback(txn_id)
    await paddle.chargeback_reverse(txn_id)
    assert since() == [
        ("adjustment.created", E.PAYMENT_DISPUTED),
        ("adjustment.created", E.PAYMENT_DISPUTE_CLOSED),
    ]
    adjustment = json.loads(app.got[-1][1])["data"]
    assert adjustment["transaction_id"] == txn_id and "custom_data" not in adjustment


async def test_portal_sessions_are_for_a_customer_and_their_subscriptions(http, paddle):
    txn_id = await create(http, paddle, cycle={"interval": "month", "frequency": 1})
    await paddle.pay(txn_id)
    sub_id = paddle.subscription_of(TX)
    customer = paddle.subscription(sub_id)["customer_id"]
    url = f"{paddle.url}/customers/{customer}/portal-sessions"
    made = await http.post(url, json={"subscription_ids": [sub_id]}, headers=headers())
    assert made.status_code == 201
    session = made.json()["data"]
    assert (
        session["customer_id"] == customer and session["urls"]["subscriptions"][0]["id"] == sub_id
    )
    page = await http.get(session["urls"]["general"]["overview"])
    assert page.status_code == 200 and "Cancel subscription" in page.text
    canceled = await http.post(
        session["urls"]["general"]["overview"].split("?")[0],
        data={"action": "cancel_subscription", "subscription_id": sub_id},
    )
    assert canceled.status_code == 200 and paddle.subscription(sub_id)["status"] == "canceled"
    stranger = f"{paddle.url}/customers/ctm_01jd0000000000000000000000/portal-sessions"
    assert (await http.post(stranger, json={}, headers=headers())).status_code == 404
    other = await http.post(
        url, json={"subscription_ids": ["sub_01jd0000000000000000000000"]}, headers=headers()
    )
    assert other.status_code == 400


async def test_paused_deliveries_wait_and_keep_their_order(http, paddle, receiver):
    app, url = receiver
    paddle.register_destination(KEY, url, event_types=["transaction.paid", "transaction.completed"])
    paddle.deliveries_paused = True
    txn_id = await create(http, paddle)
    await paddle.pay(txn_id)
    assert app.got == [] and len(paddle.held) == 3
    await paddle.release_held()
    assert app.types() == ["transaction.paid", "transaction.completed"]  # only what it takes


async def test_a_failing_api_answers_503_in_paddles_shape(http, paddle):
    paddle.fail_next_requests = 1
    failed = await http.post(
        f"{paddle.url}/transactions", json=transaction_body(), headers=headers()
    )
    assert failed.status_code == 503 and failed.json()["error"]["type"] == "api_error"
    assert (
        await http.post(f"{paddle.url}/transactions", json=transaction_body(), headers=headers())
    ).status_code == 201


SUBSCRIPTION_TYPES = {t for t in SUPPORTED_TRIGGERS if t.startswith("subscription.")}


@pytest.mark.parametrize("normalized_type", SUPPORTED_TRIGGERS)
def test_every_trigger_normalizes_to_its_type(normalized_type: str) -> None:
    txn = "txn_01jd0000000000000000000003"
    tx = {
        "id": TX,
        "kind": "subscription" if normalized_type in SUBSCRIPTION_TYPES else "payment",
        "amount": 1999,
        "currency": "EUR",
        "interval": "month",
        "providerRef": txn,
    }
    event = event_for_trigger(normalized_type, tx)
    result = normalize(json.dumps(event).encode())
    assert result.type == normalized_type
    if event["event_type"].startswith("adjustment."):
        assert result.refs == (txn,)  # matched by the transaction the node made
    else:
        assert result.tx_id == TX


def test_an_unknown_trigger_names_the_supported_ones() -> None:
    with pytest.raises(ValueError, match="payment.succeeded"):
        event_for_trigger("manual.marked_paid", {"id": TX})


# --- Paddle's rules for prices and transactions ----------------------------------------------


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        # openapi.yaml transaction-price-create-base: description minLength 2, maxLength 500
        ({"description": "A"}, "items[0].price.description", "min length of 2"),
        ({"description": "x" * 501}, "items[0].price.description", "max length of 500"),
        # ... name 1 to 150 when given
        ({"name": ""}, "items[0].price.name", "min length of 1"),
        # transaction-subscription-product-create: name 1 to 200
        ({"product": {"name": "", "tax_category": "standard"}}, "items[0].price.product.name", ""),
    ],
)
async def test_a_price_paddle_would_not_take_is_refused_with_its_field(
    http, paddle, change, field, message
):
    body = transaction_body()
    body["items"][0]["price"].update(change)
    refused = await http.post(f"{paddle.url}/transactions", json=body, headers=headers())
    assert refused.status_code == 400, refused.text
    error = refused.json()["error"]
    # developer.paddle.com/errors/shared/invalid_field: 400, "Request does not pass
    # validation.", with ``errors`` of {field, message}
    assert (error["type"], error["code"]) == ("request_error", "invalid_field")
    assert error["detail"] == "Request does not pass validation."
    assert error["documentation_url"] == "https://developer.paddle.com/errors/shared/invalid_field"
    ((found,),) = [error["errors"]]
    assert found["field"] == field and message in found["message"]


async def test_a_two_character_description_is_taken(http, paddle):
    body = transaction_body()
    body["items"][0]["price"].update(description="Ab", name="Ab")
    assert (
        await http.post(f"{paddle.url}/transactions", json=body, headers=headers())
    ).status_code == 201


async def test_a_canceled_transaction_takes_no_payment_and_a_paid_one_no_cancel(http, paddle):
    """openapi.yaml (PATCH /transactions/{transaction_id}): "You can update transactions that
    are draft or ready. billed and completed transactions are considered records ... Create an
    adjustment ... Cancel a billed transaction"; developer.paddle.com/errors/transactions/
    transaction_invalid_status_change ("canceled when it is not ready or billed") and
    transaction_not_ready_cannot_process_payment (422: "Transaction has been canceled",
    "payment has already been completed")."""
    url = f"{paddle.url}/transactions"
    canceled = await create(http, paddle)
    answer = await http.patch(f"{url}/{canceled}", json={"status": "canceled"}, headers=headers())
    assert answer.status_code == 200 and answer.json()["data"]["status"] == "canceled"
    with pytest.raises(PaddleError) as refused:
        await paddle.pay(canceled)
    assert (refused.value.status, refused.value.code) == (
        422,
        "transaction_not_ready_cannot_process_payment",
    )
    page = await http.post(f"{paddle.url}/checkout/{canceled}", data={"action": "pay"})
    assert "Cannot process payment for non-ready transaction" in page.text
    assert paddle.transaction(canceled)["status"] == "canceled"

    paid = await create(http, paddle)
    await paddle.pay(paid)
    again = await http.patch(f"{url}/{paid}", json={"status": "canceled"}, headers=headers())
    assert again.status_code == 400
    assert again.json()["error"]["code"] == "transaction_invalid_status_change"
    assert again.json()["error"]["detail"] == (
        "Invalid attempt to change status from 'completed' to 'canceled'"
    )
    with pytest.raises(PaddleError):
        await paddle.cancel_transaction(paid)
    with pytest.raises(PaddleError):
        await paddle.pay(paid)  # paid already
    assert paddle.transaction(paid)["status"] == "completed"

    both = await create(http, paddle)
    mixed = await http.patch(
        f"{url}/{both}", json={"status": "canceled", "custom_data": {"a": "b"}}, headers=headers()
    )
    assert mixed.json()["error"]["code"] == "transaction_cannot_be_modified_and_canceled"
    closed = await http.patch(f"{url}/{paid}", json={"custom_data": {"a": "b"}}, headers=headers())
    assert closed.json()["error"]["code"] == "transaction_immutable"


# --- Paddle.js: anyone with the page's client-side token ------------------------------------


async def test_paddle_js_opens_a_checkout_for_a_catalog_price_with_any_custom_data(
    http, paddle, receiver
):
    """PaddleHQ/paddle-js-wrapper@7e60bf55 types/checkout/checkout.d.ts:111-124: open() takes
    ``items`` or a ``transactionId``, and ``customData``; it needs only the client-side token
    (``Paddle.Initialize({token})``). developer.paddle.com/paddle-js/methods/paddle-checkout-open:
    "Send custom data to Paddle"."""
    app, url = receiver
    paddle.register_destination(KEY, url)
    token = paddle.register_client_token(KEY)
    price = paddle.create_price(KEY, "Tip", 100, "EUR")
    txn_id = await paddle.checkout_open(
        token, items=[{"priceId": price, "quantity": 1}], custom_data={"txId": TX}
    )
    txn = paddle.transaction(txn_id)
    assert (txn["origin"], txn["status"], txn["custom_data"]) == ("web", "draft", {"txId": TX})
    assert txn["items"][0]["price"]["id"] == price
    assert txn["items"][0]["price"]["type"] == "standard"
    await paddle.pay(txn_id)
    assert app.types() == ["transaction.created", "transaction.paid", "transaction.completed"]
    completed = app.events()[-1]["data"]
    assert completed["custom_data"] == {"txId": TX}
    assert completed["details"]["totals"]["grand_total"] == "100"
    # the node's reading: its txId, on a transaction it never made
    assert normalize(app.got[-1][1]).tx_id == TX
    with pytest.raises(KeyError):
        paddle.transaction_of(TX)  # not a transaction made through the API

    with pytest.raises(PaddleError):
        await paddle.checkout_open("test_not_a_token", items=[{"priceId": price}])
    other = paddle.register_client_token("pdl_sdbx_apikey_other")
    with pytest.raises(PaddleError):  # another account's catalog
        await paddle.checkout_open(other, items=[{"priceId": price}])
    with pytest.raises(PaddleError):  # "contain at least one key"
        await paddle.checkout_open(token, items=[{"priceId": price}], custom_data={})


async def test_update_checkout_replaces_custom_data_while_the_checkout_is_open(
    http, paddle, receiver
):
    """Paddle changelog 2025-02-27 (developer.paddle.com/changelog/2025/
    update-checkout-custom-data): updateCheckout's ``customData`` "is held against the related
    transaction. ... If custom data already exists, it's replaced. Must be valid JSON and
    contain at least one key." On the merchant's own transaction too: the page holds its id."""
    app, url = receiver
    paddle.register_destination(KEY, url)
    token = paddle.register_client_token(KEY)
    txn_id = await create(http, paddle)
    assert await paddle.checkout_open(token, transaction_id=txn_id) == txn_id
    await paddle.update_checkout(token, txn_id, {"txId": "tx_01JD0000000000000000000002"})
    assert paddle.transaction(txn_id)["custom_data"] == {"txId": "tx_01JD0000000000000000000002"}
    assert app.types()[-1] == "transaction.updated"
    await paddle.pay(txn_id)
    assert app.events()[-1]["data"]["custom_data"]["txId"] == "tx_01JD0000000000000000000002"
    with pytest.raises(PaddleError) as closed:
        await paddle.update_checkout(token, txn_id, {"txId": TX})
    assert closed.value.code == "transaction_immutable"
    with pytest.raises(ValueError):  # not documented: not simulated
        await paddle.checkout_open(token, transaction_id=txn_id, custom_data={"a": "b"})


# --- refunds as Paddle makes them -------------------------------------------------------------


async def _paid(http: httpx.AsyncClient, sim: PaddleSimulator, quantity: int = 1) -> str:
    body = transaction_body(amount="1000")
    body["items"][0]["quantity"] = quantity
    answer = await http.post(f"{sim.url}/transactions", json=body, headers=headers())
    assert answer.status_code == 201, answer.text
    txn_id = str(answer.json()["data"]["id"])
    await sim.pay(txn_id)
    return txn_id


async def test_a_refund_waits_for_approval_then_is_approved_or_rejected(http, paddle, receiver):
    """openapi.yaml POST /adjustments: "Most refunds for live accounts are created with the
    status of pending_approval until reviewed by Paddle"; adjustment.updated: "This only occurs
    for refund adjustments ... created as pending_approval initially. On review, they move to
    approved or rejected"; adjustment-create.transaction_id: "You can't create an adjustment for
    a transaction that has a refund that's pending approval"
    (developer.paddle.com/errors/adjustments/adjustment_pending_refund_request)."""
    app, url = receiver
    paddle.register_destination(KEY, url)
    txn_id = await _paid(http, paddle)
    line = paddle.transaction(txn_id)["details"]["line_items"][0]["id"]
    made = await http.post(
        f"{paddle.url}/adjustments",
        json={
            "action": "refund",
            "transaction_id": txn_id,
            "reason": "error",
            "items": [{"item_id": line, "type": "partial", "amount": "300"}],
        },
        headers=headers(),
    )
    assert made.status_code == 201, made.text
    adjustment = made.json()["data"]
    assert (adjustment["status"], adjustment["type"]) == ("pending_approval", "partial")
    assert adjustment["totals"]["total"] == "300"
    assert app.types()[-1] == "adjustment.created"
    with pytest.raises(PaddleError) as refused:
        await paddle.refund(txn_id, 100)
    assert refused.value.code == "adjustment_pending_refund_request"
    await paddle.approve_refund(adjustment["id"])
    updated = app.events()[-1]
    assert updated["event_type"] == "adjustment.updated"
    assert (updated["data"]["id"], updated["data"]["status"]) == (adjustment["id"], "approved")
    assert normalize(app.got[-1][1]).type == E.PAYMENT_PARTIALLY_REFUNDED
    adjusted = paddle.transaction(txn_id)["details"]["adjusted_totals"]
    assert adjusted["grand_total"] == "700"  # "after adjustments"

    rejected = await paddle.refund(txn_id, 200, approve=False)
    await paddle.reject_refund(rejected)
    assert app.events()[-1]["data"]["status"] == "rejected"
    rejected_event = normalize(app.got[-1][1])
    assert rejected_event.type == E.PAYMENT_REFUND_FAILED  # nothing given back
    assert rejected_event.payment_status is None and rejected_event.change == rejected
    await paddle.refund(txn_id, 700)  # the rejected 200 is not taken from what is left
    assert paddle.transaction(txn_id)["details"]["adjusted_totals"]["grand_total"] == "0"


async def test_refund_types_as_paddle_sends_them(http, paddle, receiver):
    """Paddle changelog 2024-12-05 (developer.paddle.com/changelog/2024/refund-credit-full-total):
    "Use full to adjust the grand total ... If omitted, type default to partial" and "Previously,
    to refund or credit all of a transaction then you'd need to ... build an array of adjustment
    items" (openapi.yaml adjustment_item type full: "Full total for this transaction item is
    adjusted"). The notifications' ``type`` may be null: openapi.yaml adjustment.created/updated
    ``type: oneOf [adjustment_type, null]``, and PaddleHQ/paddle-python-sdk@48c8cc04
    tests/Unit/Entities/_fixtures/notification/entity/adjustment.created.json:47
    ``"type": null``."""
    app, url = receiver
    paddle.register_destination(KEY, url)
    by_items = await _paid(http, paddle, quantity=2)
    line = paddle.transaction(by_items)["details"]["line_items"][0]
    assert line["totals"]["total"] == "2000"
    await paddle.refund(by_items, items=[{"item_id": line["id"], "type": "full"}])
    whole = app.events()[-1]["data"]
    assert (whole["type"], whole["items"][0]["type"], whole["totals"]["total"]) == (
        "partial",
        "full",
        "2000",
    )
    nulled = await _paid(http, paddle)
    await paddle.refund(nulled, 400, null_type=True)
    await paddle.refund(nulled, 600, null_type=True)
    created, updated = app.events()[-4], app.events()[-3]
    assert created["data"]["type"] is None and updated["data"]["type"] is None
    assert [e["data"]["totals"]["total"] for e in app.events()[-3::2]] == ["400", "600"]
    full = await _paid(http, paddle)
    await paddle.refund(full)
    assert app.events()[-1]["data"]["type"] == "full"

    line = paddle.transaction(nulled)["details"]["line_items"][0]["id"]
    for item, code in (
        ({"item_id": line, "type": "full"}, "adjustment_transaction_item_invalid"),
        (
            {"item_id": line, "type": "partial", "amount": "1"},
            "adjustment_transaction_item_invalid",
        ),
    ):
        with pytest.raises(PaddleError) as refused:
            await paddle.refund(nulled, items=[item])
        assert refused.value.code == code
        assert refused.value.errors and "fully adjusted" in refused.value.errors[0]["message"]
    with pytest.raises(PaddleError) as nothing_left:
        await paddle.refund(nulled)
    assert nothing_left.value.code == "adjustment_total_amount_above_remaining_allowed"
    unpaid = await create(http, paddle)
    with pytest.raises(PaddleError) as not_completed:
        await paddle.refund(unpaid)
    assert not_completed.value.code == "adjustment_transaction_invalid_status_for_refund"
