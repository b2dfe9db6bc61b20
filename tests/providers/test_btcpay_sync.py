"""Asking BTCPay (CONTRACT 4.3a): ``sync`` reads the invoice, its payment methods and its refunds
and answers the events its webhooks would have given, deduplicated by the invoice and the state
seen, the same change as the webhook's; ``found`` False for an invoice BTCPay does not have;
``list_events`` pages through the store's invoices by creation date. Against the simulator,
over HTTP, with the webhooks the simulator sent for the same invoice as the yardstick."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import trio
from support.asgi import serve_asgi

from edge.domain import attention, changes
from edge.domain.convergence import Refund
from edge.domain.events import EventType as E
from edge.domain.status import Status as S
from edge.providers.base import (
    REFUND,
    REFUND_PENDING,
    CheckoutRequest,
    EventsRequest,
    FollowUp,
    FollowUpRequest,
    NormalizedEvent,
    SyncRequest,
)
from edge.providers.btcpay import BTCPAY, events, sync
from edge.sim.btcpay import BTCPaySimulator

TX = "tx_01JD0000000000000000000007"
RF = "rf_01JD00000000000000000000B2"


class Webhooks:
    """The store's webhook endpoint: what BTCPay sent, normalized as the node reads it."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []

    async def __call__(self, scope: dict[str, Any], body: bytes) -> tuple[int, bytes]:
        self.bodies.append(body)
        return 200, b""

    def of(self, btcpay_type: str) -> NormalizedEvent:
        return next(
            events.normalize(b) for b in self.bodies if json.loads(b)["type"] == btcpay_type
        )


@pytest.fixture
async def btcpay() -> AsyncIterator[tuple[BTCPaySimulator, Webhooks, str]]:
    simulator, webhooks = BTCPaySimulator(retry_delays_s=(0.01,)), Webhooks()
    async with simulator.serving(), trio.open_nursery() as nursery:
        store = simulator.register_store("k")
        simulator.register_webhook(store, await nursery.start(serve_asgi, webhooks))
        yield simulator, webhooks, store
        nursery.cancel_scope.cancel()


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient() as client:
        yield client


def credentials(sim: BTCPaySimulator, store: str) -> dict[str, str]:
    return {"serverUrl": sim.url, "apiKey": "k", "storeId": store, "webhookSecret": "s"}


async def checkout(
    sim: BTCPaySimulator, http: httpx.AsyncClient, store: str, tx_id: str = TX
) -> dict[str, Any]:
    tx = {"id": tx_id, "kind": "payment", "amount": 1000, "currency": "EUR", "isTest": True}
    made = await BTCPAY.create_checkout(
        CheckoutRequest(tx, {"name": "A book"}, credentials(sim, store), "https://s/ok", "", http)
    )
    return {**tx, "providerRef": made.provider_ref}


async def asked(
    sim: BTCPaySimulator, http: httpx.AsyncClient, store: str, tx: dict[str, Any]
) -> Any:
    assert BTCPAY.sync is not None
    return await BTCPAY.sync(SyncRequest(tx, None, credentials(sim, store), http))


def change(event: NormalizedEvent, tx: dict[str, Any]) -> str | None:
    """The change the node names for the event (``edge.domain.changes``), as intake does."""
    stated = event.states_amount
    return changes.change_key(
        event.type,
        named=event.change,
        refund_of=event.refund.of if event.refund else None,
        amount=event.amount_minor if stated else tx["amount"],
        currency=event.currency if stated else tx["currency"],
    )


def same_as_webhook(read: NormalizedEvent, sent: NormalizedEvent, tx: dict[str, Any]) -> None:
    assert (read.type, read.payment_status, read.attention) == (
        sent.type,
        sent.payment_status,
        sent.attention,
    )
    assert change(read, tx) == change(sent, tx) is not None
    assert read.refs == sent.refs and read.tx_id == sent.tx_id == tx["id"]


async def test_an_invoice_btcpay_does_not_have_is_not_found(btcpay, http):
    sim, _, store = btcpay
    tx = {"id": TX, "amount": 1000, "currency": "EUR", "providerRef": "nope"}
    result = await asked(sim, http, store, tx)
    assert not result.found and result.events == () and "nope" in result.detail
    bare = await asked(sim, http, store, {**tx, "providerRef": None})
    assert not bare.found


async def test_a_new_invoice_says_nothing_yet(btcpay, http):
    sim, _, store = btcpay
    tx = await checkout(sim, http, store)
    await sim.pay(tx["providerRef"], part=True)
    result = await asked(sim, http, store, tx)
    assert result.found and result.events == () and result.refunds == ()
    assert result.body


@pytest.mark.parametrize(
    ("acts", "webhook", "kind", "target"),
    [
        (("pay",), "InvoiceProcessing", E.PAYMENT_PROCESSING, S.PROCESSING),
        (("pay", "confirm"), "InvoiceSettled", E.PAYMENT_SUCCEEDED, S.SUCCEEDED),
        (("pay", "invalidate"), "InvoiceInvalid", E.PAYMENT_FAILED, S.FAILED),
        (("expire",), "InvoiceExpired", E.CHECKOUT_EXPIRED, S.EXPIRED),
    ],
)
async def test_the_status_is_the_event_that_set_it(btcpay, http, acts, webhook, kind, target):
    sim, webhooks, store = btcpay
    tx = await checkout(sim, http, store)
    for act in acts:
        await getattr(sim, act)(tx["providerRef"])
    await sim.drained()
    result = await asked(sim, http, store, tx)
    [read] = result.events
    assert (read.type, read.payment_status) == (kind, target)
    status = sim.invoice(tx["providerRef"])["status"]
    assert read.dedup_ids == (f"sync:{tx['providerRef']}:{status}",)
    assert read.provider_event_id == read.dedup_ids[0]
    same_as_webhook(read, webhooks.of(webhook), tx)
    # asking twice names the same object in the same state: stored once
    assert [e.dedup_ids for e in (await asked(sim, http, store, tx)).events] == [read.dedup_ids]


async def test_an_invoice_marked_settled_is_a_success(btcpay, http):
    sim, webhooks, store = btcpay
    tx = await checkout(sim, http, store)
    await sim.mark(tx["providerRef"], "Settled")
    await sim.drained()
    [read] = (await asked(sim, http, store, tx)).events
    same_as_webhook(read, webhooks.of("InvoiceSettled"), tx)


async def test_an_expiry_part_paid_is_flagged_once_as_its_webhooks_flag_it(btcpay, http):
    sim, webhooks, store = btcpay
    tx = await checkout(sim, http, store)
    await sim.pay(tx["providerRef"], part=True)
    await sim.expire(tx["providerRef"])
    await sim.drained()
    [read] = (await asked(sim, http, store, tx)).events
    assert read.attention == attention.PAID_LATE
    expires = sim.invoice(tx["providerRef"])["expirationTime"]
    assert read.occurred_at_ms == expires * 1000
    # whether the store sends InvoiceExpired, InvoiceExpiredPaidPartial or both: one change
    same_as_webhook(read, webhooks.of("InvoiceExpired"), tx)
    same_as_webhook(read, webhooks.of("InvoiceExpiredPaidPartial"), tx)


async def test_money_after_the_expiry_is_paid_late_beside_the_expiry(btcpay, http):
    sim, webhooks, store = btcpay
    tx = await checkout(sim, http, store)
    await sim.expire(tx["providerRef"])
    sim.clock_offset_s = 60
    await sim.pay(tx["providerRef"])  # in full, after the expiry: PaidLate
    await sim.drained()
    expired, paid, late = (await asked(sim, http, store, tx)).events
    assert expired.attention is None  # nothing was paid by the expiry
    same_as_webhook(expired, webhooks.of("InvoiceExpired"), tx)
    # the payment after the expiry, as its InvoiceReceivedPayment (afterExpiration) tells it
    assert (paid.type, paid.payment_status) == (E.PAYMENT_PROCESSING, None)
    assert paid.attention == attention.PAID_LATE
    assert paid.dedup_ids == (f"sync:{tx['providerRef']}:PaidAfterExpiry",)
    same_as_webhook(late, webhooks.of("InvoicePaidAfterExpiration"), tx)
    assert late.dedup_ids == (f"sync:{tx['providerRef']}:PaidLate",)


async def test_the_refunds_are_read_beside_the_invoice(btcpay, http):
    sim, _, store = btcpay
    tx = await checkout(sim, http, store)
    await sim.pay(tx["providerRef"])
    await sim.confirm(tx["providerRef"])
    params = {"refundId": RF, "amount": 300, "reason": None, "whole": False}
    assert BTCPAY.send_refund is not None
    ours = await BTCPAY.send_refund(
        FollowUpRequest(FollowUp(REFUND, params), tx, credentials(sim, store), http)
    )
    screens = await sim.refund(tx["providerRef"], "Custom", "2.00")
    result = await asked(sim, http, store, tx)
    assert {(r.id, r.tag, r.amount_minor) for r in result.refunds} == {
        (ours.id, RF, 300),
        (screens, None, 200),
    }
    settled, *refunded = result.events
    assert settled.type == E.PAYMENT_SUCCEEDED
    assert {(e.refund, e.link_refs, e.type) for e in refunded} == {
        (Refund(300, ours.id), (ours.id,), E.PAYMENT_PARTIALLY_REFUNDED),
        (Refund(200, screens), (screens,), E.PAYMENT_PARTIALLY_REFUNDED),
    }
    assert {e.provider_refund.state for e in refunded if e.provider_refund} == {REFUND_PENDING}
    # the refund's change is its pull payment, whichever way the node learns of it
    assert {change(e, tx) for e in refunded} == {f"refund:{ours.id}", f"refund:{screens}"}


async def test_the_invoice_list_pages_through_the_stores_invoices_since_a_time(
    btcpay, http, monkeypatch
):
    sim, _, store = btcpay
    monkeypatch.setattr(sync, "PAGE", 2)
    old = await checkout(sim, http, store, "tx_01JD0000000000000000000008")
    sim.clock_offset_s = 100
    made = [
        (await checkout(sim, http, store, f"tx_01JD000000000000000000001{n}"))["providerRef"]
        for n in range(3)
    ]
    pos = sim.register_pos_app(store)
    await http.post(f"{sim.url}/apps/{pos}/pos", data={"amount": "1.00", "orderId": "A-1"})
    since_ms = sim.invoice(made[0])["createdTime"] * 1000
    assert BTCPAY.list_events is not None

    async def page(cursor: str | None) -> Any:
        return await BTCPAY.list_events(
            EventsRequest(credentials(sim, store), "test", since_ms, http, cursor)
        )

    first = await page(None)
    assert first.bodies == () and first.cursor is not None
    sim.clock_offset_s = 200
    await checkout(sim, http, store, "tx_01JD0000000000000000000020")  # made meanwhile
    found, cursor = list(first.objects), first.cursor
    while cursor is not None:
        more = await page(cursor)
        found, cursor = found + list(more.objects), more.cursor
    # newest first; the Point of Sale invoice (orderId A-1) is not the node's; the one made
    # meanwhile is past the first page's end, so nothing shifted and nothing came twice
    assert found == made[::-1]
    assert old["providerRef"] not in found
