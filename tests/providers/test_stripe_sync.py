"""Asking Stripe (edge.providers.stripe.sync) against the simulator over HTTP: a transaction's
objects read back as the events their webhooks would have given, each under an id naming the
object and the state seen, each the same change as the webhook's; and Stripe's event list,
page by page."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from support.waits import bound

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
    NormalizedEvent,
    SyncRequest,
    SyncResult,
)
from edge.providers.stripe import STRIPE
from edge.sim.stripe import StripeSimulator

SECRET_KEY = "sk_test_sync_0123456789abcdef"
TX = "tx_01JD0000000000000000000008"


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=bound(10.0)) as client:
        yield client


def credentials(sim: StripeSimulator) -> dict[str, Any]:
    return {"secretKey": SECRET_KEY, "apiBase": sim.url}


def node_tx(session_id: str, kind: str = "payment") -> dict[str, Any]:
    return {
        "id": TX, "kind": kind, "amount": 1999, "currency": "EUR", "quantity": 1,
        "interval": "month" if kind == "subscription" else None, "metadata": {},
        "providerRef": session_id,
    }  # fmt: skip


async def open_session(sim: StripeSimulator, http: httpx.AsyncClient, kind: str = "payment") -> str:
    made = await STRIPE.create_checkout(
        CheckoutRequest(
            tx=node_tx("", kind),
            product={"name": "Pro"},
            credentials=credentials(sim),
            success_url="https://s",
            cancel_url="https://c",
            http=http,
        )  # fmt: skip
    )
    assert made.provider_ref is not None
    return made.provider_ref


async def sync(
    sim: StripeSimulator,
    http: httpx.AsyncClient,
    session_id: str,
    kind: str = "payment",
    subscription: dict[str, Any] | None = None,
) -> SyncResult:
    assert STRIPE.sync is not None
    return await STRIPE.sync(
        SyncRequest(node_tx(session_id, kind), subscription, credentials(sim), http)
    )


async def told(sim: StripeSimulator, http: httpx.AsyncClient) -> list[NormalizedEvent]:
    """Every event Stripe kept, as its webhook would have been normalized (the event list)."""
    assert STRIPE.list_events is not None
    found: list[NormalizedEvent] = []
    cursor = None
    while True:
        page = await STRIPE.list_events(
            EventsRequest(credentials(sim), "test", 0, http, cursor=cursor)
        )
        found += [STRIPE.normalize(body, "test") for body in page.bodies]
        cursor = page.cursor
        if cursor is None:
            return found


def key(event: NormalizedEvent) -> str | None:
    """The change the node names an event by (edge.domain.changes), from what it says."""
    return change_key(
        event.type,
        named=event.change,
        refund_of=event.refund.of if event.refund else None,
        amount=event.amount_minor,
        currency=event.currency,
    )


def same_change(asked: NormalizedEvent, webhooks: list[NormalizedEvent]) -> NormalizedEvent:
    """A webhook's event that reports the change ``asked`` reports (Stripe may tell one change
    in several events: a failed refund's refund.failed, refund.updated ...)."""
    same = [
        w for w in webhooks
        if key(w) == key(asked) and w.type == asked.type and w.refs == asked.refs
    ]  # fmt: skip
    assert same, (asked, webhooks)
    return same[0]


async def test_a_session_stripe_does_not_know_is_not_found(
    sim: StripeSimulator, http: httpx.AsyncClient
) -> None:
    result = await sync(sim, http, "cs_test_unknown")
    assert not result.found and result.events == () and b"resource_missing" in result.body
    none_made = await sync(sim, http, "")  # the checkout call never answered
    assert not none_made.found and none_made.detail


async def test_an_open_session_says_nothing_yet(
    sim: StripeSimulator, http: httpx.AsyncClient
) -> None:
    result = await sync(sim, http, await open_session(sim, http))
    assert result.found and result.events == () and result.refunds == ()


async def test_a_paid_session_is_its_webhooks_payment(
    sim: StripeSimulator, http: httpx.AsyncClient
) -> None:
    session_id = await open_session(sim, http)
    await sim.complete(session_id)
    result = await sync(sim, http, session_id)
    (paid,) = result.events
    assert (paid.type, paid.payment_status) == (E.PAYMENT_SUCCEEDED, S.SUCCEEDED)
    assert paid.dedup_ids == (f"sync:{session_id}:paid",) == (paid.provider_event_id,)
    assert (paid.amount_minor, paid.currency, paid.tx_id) == (1999, "EUR", TX)
    intent = sim.session(session_id)["payment_intent"]
    assert paid.refs == (session_id,) and paid.link_refs == (intent,)
    webhook = same_change(paid, await told(sim, http))
    assert webhook.provider_type == "checkout.session.completed"
    assert (webhook.link_refs, webhook.amount_minor) == (paid.link_refs, paid.amount_minor)
    assert paid.occurred_at_ms is not None and webhook.occurred_at_ms is not None
    assert abs(paid.occurred_at_ms - webhook.occurred_at_ms) <= 1000  # the charge's time
    again = await sync(sim, http, session_id)
    assert [e.dedup_ids for e in again.events] == [e.dedup_ids for e in result.events]


async def test_an_expired_session(sim: StripeSimulator, http: httpx.AsyncClient) -> None:
    session_id = await open_session(sim, http)
    await sim.expire(session_id)
    (expired,) = (await sync(sim, http, session_id)).events
    assert (expired.type, expired.payment_status) == (E.CHECKOUT_EXPIRED, S.EXPIRED)
    assert expired.dedup_ids == (f"sync:{session_id}:expired",)
    assert expired.occurred_at_ms == sim.session(session_id)["expires_at"] * 1000
    same_change(expired, await told(sim, http))


async def test_each_refund_in_its_state_as_its_own_events_say(
    sim: StripeSimulator, http: httpx.AsyncClient
) -> None:
    session_id = await open_session(sim, http)
    await sim.complete(session_id)
    done = await sim.refund(session_id, 300)
    sim.pending_refunds = True
    waiting = await sim.refund(session_id, 200)
    sim.pending_refunds = False
    failing = await sim.refund(session_id, 100)
    await sim.fail_refund(failing)
    result = await sync(sim, http, session_id)
    by_id = {e.provider_refund.id: e for e in result.events if e.provider_refund}
    assert set(by_id) == {done, waiting, failing}
    assert (by_id[done].type, by_id[done].payment_status) == (E.PAYMENT_REFUNDED, S.REFUNDED)
    assert by_id[done].refund == Refund(300, of=done)
    assert by_id[done].dedup_ids == (f"sync:{done}:succeeded",)
    assert (by_id[waiting].type, by_id[waiting].payment_status) == (E.UNMATCHED, None)
    assert by_id[waiting].refund is None and by_id[waiting].refs[0] is not None
    assert by_id[failing].type == E.PAYMENT_REFUND_FAILED
    assert by_id[failing].refund == Refund(100, of=failing)
    assert by_id[failing].provider_refund == result.refunds[0]
    assert result.refunds[0].detail == "expired_or_canceled_card"
    assert {r.id: r.state for r in result.refunds} == {
        done: REFUND_SUCCEEDED,
        waiting: REFUND_PENDING,
        failing: REFUND_FAILED,
    }
    webhooks = await told(sim, http)
    for asked in (by_id[done], by_id[failing]):
        assert key(same_change(asked, webhooks)) == key(asked)


async def test_a_partial_dispute_lost_and_a_warning(
    sim: StripeSimulator, http: httpx.AsyncClient
) -> None:
    session_id = await open_session(sim, http)
    await sim.complete(session_id)
    warning = await sim.fraud_warning(session_id)
    dispute = await sim.dispute(session_id, amount=700)
    await sim.close_dispute(session_id, "lost")
    result = await sync(sim, http, session_id)
    by_type = {e.type: e for e in result.events}
    warned = by_type[E.PAYMENT_DISPUTE_WARNING]
    assert warned.change == warning and warned.payment_status is None
    assert (warned.amount_minor, warned.currency) == (1999, "EUR")  # the charge's
    opened, closed = by_type[E.PAYMENT_DISPUTED], by_type[E.PAYMENT_DISPUTE_CLOSED]
    assert opened.dedup_ids == (f"sync:{dispute}:opened",) and opened.change == dispute
    assert (opened.amount_minor, opened.payment_status) == (700, S.DISPUTED)
    assert closed.dedup_ids == (f"sync:{dispute}:lost",) and closed.change == dispute
    assert (closed.payment_status, closed.refund) == (S.REFUNDED, Refund(700, of=dispute))
    webhooks = await told(sim, http)
    for asked in (warned, opened, closed):
        same_change(asked, webhooks)


async def test_a_subscription_renewal_failed_then_paid(
    sim: StripeSimulator, http: httpx.AsyncClient
) -> None:
    session_id = await open_session(sim, http, "subscription")
    await sim.complete(session_id)
    sub_id = sim.session(session_id)["subscription"]
    record = {"providerRef": sub_id, "status": "active"}
    first = await sync(sim, http, session_id, "subscription", record)
    (paid,) = first.events  # the first invoice is the checkout's own payment
    assert paid.starts_subscription and paid.subscription_ref == sub_id
    assert paid.occurred_at_ms is not None

    await sim.fail_invoice(sub_id)
    result = await sync(sim, http, session_id, "subscription", record)
    by_type = {e.type: e for e in result.events}
    invoice = sim.session(session_id)  # the session names the first invoice only
    past_due, failed = by_type[E.SUBSCRIPTION_PAST_DUE], by_type[E.SUBSCRIPTION_PAYMENT_FAILED]
    assert past_due.subscription_status == S.PAST_DUE and past_due.subscription_ref == sub_id
    assert failed.change is not None and failed.change != invoice["invoice"]
    assert failed.dedup_ids == (f"sync:{failed.change}:payment_failed",)
    webhooks = await told(sim, http)
    assert same_change(failed, webhooks).change == failed.change

    await sim.pay_invoice(sub_id)
    renewed = await sync(sim, http, session_id, "subscription", {**record, "status": "past_due"})
    by_type = {e.type: e for e in renewed.events}
    active = by_type[E.SUBSCRIPTION_UPDATED]
    assert active.subscription_status == S.ACTIVE
    assert active.dedup_ids != past_due.dedup_ids
    paid_again = by_type[E.SUBSCRIPTION_PAYMENT_SUCCEEDED]
    assert paid_again.subscription_status == S.ACTIVE and paid_again.payment_status is None
    assert same_change(paid_again, await told(sim, http)).change == paid_again.change


async def test_a_rate_limited_ask_is_retried_later(
    sim: StripeSimulator, http: httpx.AsyncClient
) -> None:
    session_id = await open_session(sim, http)
    sim.rate_limit_next(1)
    with pytest.raises(ProviderError) as limited:
        await sync(sim, http, session_id)
    assert limited.value.retryable
    assert (await sync(sim, http, session_id)).found


# --- the event list ------------------------------------------------------------------------


async def test_the_event_list_pages_through_every_event_newest_first(
    sim: StripeSimulator, http: httpx.AsyncClient
) -> None:
    session_id = await open_session(sim, http)
    await sim.complete(session_id)
    for _ in range(60):  # two events each: more than a page of 100
        await sim.refund(session_id, 10)
    events = await told(sim, http)
    assert len(events) == 121 and len({e.provider_event_id for e in events}) == 121
    assert events[-1].provider_type == "checkout.session.completed"  # the oldest, last
    assert all(e.dedup_ids == (e.provider_event_id,) for e in events)
    assert STRIPE.list_events is not None
    later = await STRIPE.list_events(
        EventsRequest(
            credentials(sim), "test", (sim.session(session_id)["created"] + 3600) * 1000, http
        )
    )
    assert later.bodies == () and later.cursor is None


async def test_the_event_list_keeps_the_types_a_webhook_endpoint_takes() -> None:
    """Stripe's list holds every event of the account; the node takes what its endpoint is
    subscribed to (HANDLED_EVENT_TYPES)."""

    def answer(request: httpx.Request) -> httpx.Response:
        data = [
            {"id": "evt_2", "object": "event", "type": "payment_intent.created", "data": {}},
            {"id": "evt_1", "object": "event", "type": "charge.refunded", "data": {}},
        ]
        return httpx.Response(
            200, json={"object": "list", "data": data, "has_more": True, "url": "/v1/events"}
        )

    async with httpx.AsyncClient(transport=httpx.MockTransport(answer)) as http:
        assert STRIPE.list_events is not None
        page = await STRIPE.list_events(EventsRequest({"secretKey": SECRET_KEY}, "test", 0, http))
    assert [json.loads(b)["id"] for b in page.bodies] == ["evt_1"] and page.cursor == "evt_1"


async def test_a_404_that_is_not_stripes_word_for_missing_is_an_error() -> None:
    """Only ``resource_missing`` says Stripe does not know the session; another 404 (a wrong
    ``apiBase``, a proxy) is a refusal, not a session found missing."""

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(404, text="<html>Not Found</html>")

    async with httpx.AsyncClient(transport=httpx.MockTransport(answer)) as http:
        assert STRIPE.sync is not None
        with pytest.raises(ProviderError) as refused:
            await STRIPE.sync(
                SyncRequest(node_tx("cs_test_1"), None, {"secretKey": SECRET_KEY}, http)
            )
    assert not refused.value.retryable
