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
import trio
from support.asgi import serve_asgi

from edge.domain.events import EventType as E
from edge.providers.paddle import PADDLE
from edge.providers.paddle.events import normalize
from edge.sim.paddle import SUPPORTED_TRIGGERS, PaddleSimulator, event_for_trigger
from edge.sim.paddle.objects import body_of

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
    async with trio.open_nursery() as nursery:
        yield app, await nursery.start(serve_asgi, app)
        nursery.cancel_scope.cancel()


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
                await PADDLE.verify_webhook(got_headers, body, credentials, time.time(), unused)
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
                got_headers, body, {"live": {"webhookSecret": secret}}, time.time(), unused
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
