"""Asking Paddle (CONTRACT 4.3a): ``sync`` reads the checkout's transaction, its adjustments and
its subscription and answers the events the webhooks would have given, under deterministic
dedup ids and with the webhooks' changes (so a late webhook is the same change);
``list_events`` pages through Paddle's event stream back to a time, each event the bytes a
webhook of it carries; ``cancel_checkout`` cancels a checkout the node gave up on, or learns it
was paid. Against the simulator, over HTTP; the webhooks are the simulator's own."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import trio
from support.asgi import serving

from edge.domain.changes import change_key
from edge.domain.convergence import Refund
from edge.domain.events import EventType as E
from edge.domain.status import Status as S
from edge.errors import ProviderError
from edge.providers.base import (
    REFUND_FAILED,
    REFUND_PENDING,
    REFUND_SUCCEEDED,
    CheckoutRequest,
    EventsRequest,
    FollowUp,
    FollowUpRequest,
    NormalizedEvent,
    SyncRequest,
    SyncResult,
)
from edge.providers.paddle import PADDLE
from edge.providers.paddle.adapter import CANCEL
from edge.providers.paddle.events import normalize
from edge.providers.paddle.shapes import time_ms
from edge.sim.paddle import PaddleSimulator

TX = "tx_01JD0000000000000000000007"
KEY = "pdl_sdbx_apikey_sync"


def credentials(base: str) -> dict[str, str]:
    return {"apiKey": KEY, "clientToken": "test_0123456789abcdef", "apiBase": base}


class Receiver:
    """The node's webhook address, as far as these tests need one: it keeps what comes."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []

    async def __call__(self, scope: dict[str, Any], body: bytes) -> tuple[int, bytes]:
        self.bodies.append(body)
        return 200, b""

    def events(self) -> list[NormalizedEvent]:
        return [normalize(body) for body in self.bodies]


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient() as client:
        yield client


@pytest.fixture
async def webhooks(paddle: PaddleSimulator) -> AsyncIterator[Receiver]:
    receiver = Receiver()
    async with serving(receiver) as url:
        paddle.register_destination(KEY, url)
        yield receiver


async def checkout(
    sim: PaddleSimulator, http: httpx.AsyncClient, kind: str = "payment", amount: int = 1000
) -> dict[str, Any]:
    """A checkout the node made: its transaction record."""
    tx = {
        "id": TX,
        "kind": kind,
        "amount": amount,
        "currency": "EUR",
        "isTest": True,
        "interval": "month",
    }
    made = await PADDLE.create_checkout(
        CheckoutRequest(tx, {"name": "Plan"}, credentials(sim.url), "", "", http)
    )
    return {**tx, "providerRef": made.provider_ref}


async def sync(
    sim: PaddleSimulator,
    http: httpx.AsyncClient,
    tx: dict[str, Any],
    subscription: dict[str, Any] | None = None,
) -> SyncResult:
    assert PADDLE.sync is not None
    return await PADDLE.sync(SyncRequest(tx, subscription, credentials(sim.url), http))


def change(event: NormalizedEvent) -> str | None:
    """The change the node names an event by (``edge.domain.changes``)."""
    return change_key(
        event.type,
        named=event.change,
        refund_of=event.refund.of if event.refund else None,
        amount=event.amount_minor,
        currency=event.currency,
        sub_status=event.subscription_status,
        sub_version=1,
    )


async def test_a_transaction_paddle_does_not_know_is_not_found(paddle, http):
    tx = {"id": TX, "isTest": True, "providerRef": "txn_01jd0000000000000000000000"}
    assert (await sync(paddle, http, tx)).found is False
    assert (await sync(paddle, http, {"id": TX, "isTest": True})).found is False


async def test_an_open_checkout_says_nothing_yet(paddle, http):
    tx = await checkout(paddle, http)
    result = await sync(paddle, http, tx)
    assert (result.found, result.events, result.refunds) == (True, (), ())
    assert json.loads(result.body)["transaction"]["id"] == tx["providerRef"]
    # a subscription Paddle does not know says nothing either
    gone = {"status": "active", "providerRef": "sub_01jd0000000000000000000000"}
    assert (await sync(paddle, http, tx, gone)).events == ()


async def test_a_paid_checkout_is_the_success_its_webhooks_gave(paddle, http, webhooks):
    tx = await checkout(paddle, http)
    txn = tx["providerRef"]
    await paddle.pay(txn)
    result = await sync(paddle, http, tx)
    (paid,) = result.events
    assert (paid.type, paid.payment_status, paid.amount_minor, paid.currency) == (
        E.PAYMENT_SUCCEEDED,
        S.SUCCEEDED,
        1000,
        "EUR",
    )
    assert paid.dedup_ids == (f"sync:{txn}:completed",) == (paid.provider_event_id,)
    assert paid.refs == (txn,) and paid.tx_id == TX
    assert paid.occurred_at_ms == time_ms(paddle.transaction(txn)["updated_at"])
    # transaction.paid, then transaction.completed: one change, and the sync's is the same
    sent = [e for e in webhooks.events() if e.type == E.PAYMENT_SUCCEEDED]
    assert len(sent) == 2 and {change(e) for e in sent} == {change(paid)}
    assert await sync(paddle, http, tx) == result  # asking twice: the same, nothing new


async def test_a_buyer_paying_with_credit_still_pays_what_was_asked(paddle, http):
    tx = await checkout(paddle, http)
    await paddle.pay(tx["providerRef"], credit=300)
    (paid,) = (await sync(paddle, http, tx)).events
    assert (paid.amount_minor, paid.charged_minor) == (1000, 700)


async def test_a_canceled_checkout(paddle, http, webhooks):
    tx = await checkout(paddle, http)
    await paddle.cancel_transaction(tx["providerRef"])
    (canceled,) = (await sync(paddle, http, tx)).events
    assert (canceled.type, canceled.payment_status) == (E.CHECKOUT_CANCELED, S.CANCELED)
    (sent,) = [e for e in webhooks.events() if e.type == E.CHECKOUT_CANCELED]
    assert change(sent) == change(canceled)


async def test_refunds_chargebacks_and_warnings_as_their_webhooks(paddle, http, webhooks):
    tx = await checkout(paddle, http)
    txn = tx["providerRef"]
    await paddle.pay(txn)
    approved = await paddle.refund(txn, 300)
    rejected = await paddle.refund(txn, 200, approve=False)
    await paddle.reject_refund(rejected)
    chargeback = await paddle.chargeback(txn, 250)  # a part of it
    warning = await paddle.chargeback_warning(txn, 100)
    await paddle.chargeback_warning_reverse(txn)
    await trio.sleep(0.01)  # its reversal comes later: the chargeback's updated_at moves on
    reverse = await paddle.chargeback_reverse(txn)
    waiting = await paddle.refund(txn, 100, approve=False)
    result = await sync(paddle, http, tx)
    by_change = {e.change: e for e in result.events if e.change}
    assert {e.type for e in result.events} == {
        E.PAYMENT_SUCCEEDED,
        E.PAYMENT_PARTIALLY_REFUNDED,
        E.PAYMENT_REFUND_FAILED,
        E.PAYMENT_DISPUTED,
        E.PAYMENT_DISPUTE_WARNING,
        E.PAYMENT_DISPUTE_CLOSED,
    }  # the refund waiting for review and the warning's reversal are history only
    assert by_change[approved].refund == Refund(300, approved)
    assert by_change[rejected].refund == Refund(200, rejected)  # no longer counts
    assert by_change[chargeback].refund == Refund(250, chargeback)  # taken back
    assert by_change[chargeback].payment_status == S.DISPUTED
    assert by_change[warning].amount_minor == 100 and by_change[warning].payment_status is None
    assert by_change[reverse].payment_status == S.SUCCEEDED
    assert paddle.adjustment(chargeback)["status"] == "reversed"
    # each is the change its webhook made
    sent = {e.change: e for e in webhooks.events() if e.change and e.type != E.UNMATCHED}
    assert set(sent) == set(by_change)
    for name, event in by_change.items():
        assert (change(event), event.type, event.refund) == (
            change(sent[name]),
            sent[name].type,
            sent[name].refund,
        ), name
        assert event.dedup_ids == (f"sync:{name}:{paddle.adjustment(name)['status']}",)
    # a chargeback Paddle reversed since (its updated_at moved) is dated when it was made, as
    # its webhook was, not by its update, which would put it after its own reversal
    made = paddle.adjustment(chargeback)
    assert made["updated_at"] != made["created_at"]
    assert by_change[chargeback].occurred_at_ms == time_ms(made["created_at"])
    states = {r.id: r.state for r in result.refunds}
    assert states == {
        approved: REFUND_SUCCEEDED,
        rejected: REFUND_FAILED,
        waiting: REFUND_PENDING,
    }


async def test_a_subscription_is_started_and_its_status_told(paddle, http, webhooks):
    tx = await checkout(paddle, http, kind="subscription")
    txn = tx["providerRef"]
    await paddle.pay(txn)
    sub = str(paddle.transaction(txn)["subscription_id"])
    unknown = await sync(paddle, http, tx)  # the node never heard of the subscription
    paid, created = unknown.events
    assert paid.type == E.PAYMENT_SUCCEEDED and paid.starts_subscription
    assert (created.type, created.subscription_ref, created.subscription_status) == (
        E.SUBSCRIPTION_CREATED,
        sub,
        S.ACTIVE,
    )
    assert created.dedup_ids == (f"sync:{sub}:created",) and created.starts_subscription
    (sent,) = [e for e in webhooks.events() if e.type == E.SUBSCRIPTION_CREATED]
    assert change(sent) == change(created)

    record = {"status": "active", "providerRef": sub}
    assert (await sync(paddle, http, tx, record)).events == (paid,)  # nothing new
    await paddle.pause_subscription(sub)
    *_, paused = (await sync(paddle, http, tx, record)).events
    assert (paused.type, paused.subscription_status) == (E.SUBSCRIPTION_UPDATED, S.PAUSED)
    updated_at = paddle.subscription(sub)["updated_at"]
    assert paused.dedup_ids == (f"sync:{sub}:paused:{updated_at}",)
    (sent,) = [e for e in webhooks.events() if e.provider_type == "subscription.paused"]
    assert (sent.type, sent.subscription_status) == (paused.type, paused.subscription_status)
    await paddle.cancel_subscription(sub)
    *_, canceled = (await sync(paddle, http, tx, {**record, "status": "paused"})).events
    assert (canceled.type, canceled.subscription_status) == (E.SUBSCRIPTION_CANCELED, S.CANCELED)


async def test_asking_too_often_is_retried_after_what_paddle_says(paddle, http):
    tx = await checkout(paddle, http)
    paddle.rate_limit(retry_after_s=30)
    with pytest.raises(ProviderError) as limited:
        await sync(paddle, http, tx)
    assert limited.value.retryable and limited.value.headers["Retry-After"] == "30"
    assert "too_many_requests" in limited.value.message
    assert (await sync(paddle, http, tx)).found


# --- the event stream ------------------------------------------------------------------------


async def read_stream(
    sim: PaddleSimulator, http: httpx.AsyncClient, since_ms: int
) -> list[list[bytes]]:
    """Every page ``list_events`` gives, from the first to the one without a cursor."""
    assert PADDLE.list_events is not None
    pages, cursor = [], None
    while True:
        page = await PADDLE.list_events(
            EventsRequest(credentials(sim.url), "test", since_ms, http, cursor)
        )
        pages.append(list(page.bodies))
        assert page.objects == ()
        if page.cursor is None:
            return pages
        cursor = page.cursor


def kept(sim: PaddleSimulator) -> list[dict[str, Any]]:
    """Every event the simulator's account holds, oldest first (ids are time-ordered)."""
    events = [e for a in sim._accounts.values() for e in a.events.values()]
    return sorted(events, key=lambda e: e["event_id"])


async def test_the_event_stream_is_read_in_pages_newest_first(paddle, http):
    tx = await checkout(paddle, http)
    await paddle.pay(tx["providerRef"])
    for _ in range(60):
        await checkout(paddle, http)
    pages = await read_stream(paddle, http, since_ms=0)
    assert [len(p) for p in pages] == [50, 13]  # 61 created, paid, completed
    read = [json.loads(b) for page in pages for b in page]
    assert [e["event_id"] for e in read] == [e["event_id"] for e in reversed(kept(paddle))]
    for body in (b for page in pages for b in page):
        event = normalize(body)
        # the webhook's own event id: a webhook of it and the listed one are one event
        assert event.dedup_ids == (json.loads(body)["event_id"],)


async def test_the_stream_is_read_back_to_since_and_no_further(paddle, http):
    for _ in range(60):
        await checkout(paddle, http)
    events = kept(paddle)
    since = time_ms(events[-5]["occurred_at"])
    assert since is not None
    pages = await read_stream(paddle, http, since_ms=since)
    assert len(pages) == 1  # the first page reached back past ``since``: nothing more asked
    listed = {json.loads(b)["event_id"] for b in pages[0]}
    assert listed == {e["event_id"] for e in events if (time_ms(e["occurred_at"]) or 0) >= since}


async def test_the_stream_holds_what_webhooks_lost_and_only_what_the_node_reads(
    paddle, http, webhooks
):
    first = await checkout(paddle, http)
    paddle.webhook_faults.drop()  # every notification from now on is lost
    tx = await checkout(paddle, http)
    await paddle.pay(tx["providerRef"])
    token = paddle.register_client_token(KEY)
    await paddle.update_checkout(token, first["providerRef"], {"note": "x"})
    assert len(webhooks.bodies) == 1  # the first checkout's creation only
    (page,) = await read_stream(paddle, http, since_ms=0)
    listed = [normalize(b) for b in page]
    # in id order, which is time order to the millisecond; transaction.updated is no type the
    # node reads
    assert sorted(e.provider_type for e in listed) == [
        "transaction.completed",
        "transaction.created",
        "transaction.created",
        "transaction.paid",
    ]
    assert normalize(webhooks.bodies[0]).dedup_ids in [e.dedup_ids for e in listed]
    paid = [e for e in listed if e.type == E.PAYMENT_SUCCEEDED]
    assert len(paid) == 2 and {e.refs[0] for e in paid} == {tx["providerRef"]}


# --- cancelling a checkout the node gave up on ------------------------------------------------


async def cancel(sim: PaddleSimulator, http: httpx.AsyncClient, tx: dict[str, Any]) -> Any:
    return await PADDLE.follow_up(
        FollowUpRequest(FollowUp(CANCEL, {}), tx, credentials(sim.url), http)
    )


async def test_an_open_checkout_is_canceled_at_paddle(paddle, http, webhooks):
    tx = await checkout(paddle, http)
    txn = tx["providerRef"]
    result = await cancel(paddle, http, tx)
    assert result.done and paddle.transaction(txn)["status"] == "canceled"
    (canceled,) = result.events
    assert (canceled.type, canceled.dedup_ids) == (E.CHECKOUT_CANCELED, (f"sync:{txn}:canceled",))
    (sent,) = [e for e in webhooks.events() if e.type == E.CHECKOUT_CANCELED]
    assert change(sent) == change(canceled)
    # asked again (an answer lost): Paddle refuses, and the transaction says it is canceled
    again = await cancel(paddle, http, tx)
    assert again.events == result.events


async def test_a_checkout_paid_meanwhile_is_not_canceled_but_learned(paddle, http):
    """developer.paddle.com/errors/transactions/transaction_invalid_status_change: only a
    draft, ready or billed transaction can be canceled."""
    tx = await checkout(paddle, http)
    await paddle.pay(tx["providerRef"])
    result = await cancel(paddle, http, tx)
    assert result.done and "completed" in result.detail
    (paid,) = result.events
    assert (paid.type, paid.amount_minor) == (E.PAYMENT_SUCCEEDED, 1000)
    assert paddle.transaction(tx["providerRef"])["status"] == "completed"
