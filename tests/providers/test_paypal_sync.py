"""Asking PayPal what became of a transaction (CONTRACT 4.3a), against the simulator: the order
(or subscription), its captures, refunds and disputes, read as the events their webhooks would
have given, under the same dedup ids and the same changes, so asking twice or hearing the
webhook afterwards stores nothing twice; and PayPal's list of events, page by page."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from edge.domain import attention
from edge.domain.changes import change_key
from edge.domain.convergence import Refund
from edge.domain.events import EventType as E
from edge.domain.status import Status as S
from edge.errors import ProviderError
from edge.providers.base import (
    REFUND,
    REFUND_FAILED,
    CheckoutRequest,
    EventsRequest,
    FollowUp,
    FollowUpRequest,
    NormalizedEvent,
    SyncRequest,
    SyncResult,
)
from edge.providers.paypal import PAYPAL
from edge.providers.paypal import sync as paypal_sync
from edge.sim.paypal import PayPalSimulator

TX = "tx_01JD0000000000000000000004"
RF = "rf_01JD0000000000000000000002"
CLIENT = ("sync", "secret")
sync, list_events, send_refund = PAYPAL.sync, PAYPAL.list_events, PAYPAL.send_refund
assert sync is not None and list_events is not None and send_refund is not None


@dataclass
class Shop:
    """A merchant of the simulator whose webhooks are held (nobody listens): ``heard`` is what
    PayPal would have delivered."""

    sim: PayPalSimulator
    http: httpx.AsyncClient

    @property
    def credentials(self) -> dict[str, Any]:
        return {
            "clientId": CLIENT[0],
            "clientSecret": CLIENT[1],
            "webhookId": "W",
            "apiBase": self.sim.url,
        }

    def heard(self, event_type: str) -> NormalizedEvent:
        """The last webhook of ``event_type`` PayPal made, as the node normalizes it."""
        event = [e for _, e in self.sim.held if e["event_type"] == event_type][-1]
        return PAYPAL.normalize(json.dumps(event).encode(), "test")

    async def order(self, kind: str = "payment") -> dict[str, Any]:
        tx: dict[str, Any] = {
            "id": TX,
            "kind": kind,
            "amount": 1999,
            "currency": "EUR",
            "isTest": True,
            "createdAt": 1_790_000_000_000,
            "interval": "month",
            "metadata": {},
        }
        started = await PAYPAL.create_checkout(
            CheckoutRequest(
                tx, {"name": "A book"}, self.credentials, "https://s/t", "https://s/c", self.http
            )
        )
        tx["providerRef"] = started.provider_ref
        tx["approvalUrl"] = started.fields["url"]
        return tx

    async def approve(self, tx: dict[str, Any], action: str = "approve") -> None:
        await self.http.post(
            f"{self.sim.url}/checkoutnow", data={"token": tx["providerRef"], "action": action}
        )

    async def capture(self, tx: dict[str, Any]) -> str:
        request = FollowUpRequest(
            FollowUp("capture", {"orderId": tx["providerRef"]}), tx, self.credentials, self.http
        )
        assert (await PAYPAL.follow_up(request)).done
        return str(
            self.sim.order(tx["providerRef"])["purchase_units"][0]["payments"]["captures"][0]["id"]
        )

    async def ask(self, tx: dict[str, Any], sub: dict[str, Any] | None = None) -> SyncResult:
        return await sync(SyncRequest(tx, sub, self.credentials, self.http))


@pytest.fixture
async def shop(paypal):
    paypal.register_webhook(*CLIENT, "http://127.0.0.1:9/unreachable")
    paypal.deliveries_paused = True
    async with httpx.AsyncClient() as http:
        yield Shop(paypal, http)


def same_change(read: NormalizedEvent, heard: NormalizedEvent) -> bool:
    """Would the node name both events' change alike (``edge.domain.changes``)?"""

    def key(e: NormalizedEvent) -> str | None:
        return change_key(
            e.type,
            named=e.change,
            refund_of=e.refund.of if e.refund else None,
            amount=e.amount_minor,
            currency=e.currency,
        )

    return key(read) == key(heard) and key(read) is not None


async def test_an_order_paypal_does_not_know_is_not_found(shop):
    tx = await shop.order()
    gone = await shop.ask({**tx, "providerRef": "5O190127TN364715T"})
    assert not gone.found and gone.events == ()
    never = await shop.ask({**tx, "providerRef": None})
    assert not never.found


async def test_an_order_not_approved_says_nothing(shop):
    tx = await shop.order()
    read = await shop.ask(tx)
    assert read.found and read.events == () and read.detail == "order PAYER_ACTION_REQUIRED"


async def test_an_approved_order_whose_webhook_was_lost_still_gets_captured(shop):
    tx = await shop.order()
    await shop.approve(tx)
    read = await shop.ask(tx)
    (approved,) = read.events
    heard = shop.heard("CHECKOUT.ORDER.APPROVED")
    assert (approved.type, approved.payment_status) == (E.PAYMENT_PROCESSING, None)
    assert approved.dedup_ids == (f"order:{tx['providerRef']}:APPROVED",)
    assert approved.provider_event_id == approved.dedup_ids[0]
    assert approved.dedup_ids[0] in heard.dedup_ids and same_change(approved, heard)
    assert approved.follow_ups == heard.follow_ups
    # the capture it asks for is made
    (owed,) = approved.follow_ups
    request = FollowUpRequest(owed, tx, shop.credentials, shop.http)
    assert (await PAYPAL.follow_up(request)).done
    assert shop.sim.capture_count(tx["providerRef"]) == 1


async def test_a_completed_capture_is_the_success_its_webhook_tells(shop):
    tx = await shop.order()
    await shop.approve(tx)
    capture = await shop.capture(tx)
    first, second = await shop.ask(tx), await shop.ask(tx)
    assert first.events == second.events  # asking twice: the same names, nothing new
    (paid,) = first.events
    heard = shop.heard("PAYMENT.CAPTURE.COMPLETED")
    assert (paid.type, paid.payment_status, paid.amount_minor) == (
        E.PAYMENT_SUCCEEDED,
        S.SUCCEEDED,
        1999,
    )
    assert paid.dedup_ids == (f"capture:{capture}:COMPLETED",)
    assert paid.dedup_ids[0] in heard.dedup_ids and same_change(paid, heard)
    assert set(paid.refs) >= {tx["providerRef"], capture} and paid.tx_id == TX


async def test_a_declined_capture_fails_as_its_webhook_says(shop):
    tx = await shop.order()
    await shop.approve(tx)
    shop.sim.set_capture_outcome(tx["providerRef"], "DECLINED")
    await shop.capture(tx)
    (failed,) = (await shop.ask(tx)).events
    heard = shop.heard("PAYMENT.CAPTURE.DECLINED")
    assert (failed.type, failed.payment_status) == (E.PAYMENT_FAILED, S.FAILED)
    assert failed.dedup_ids[0] in heard.dedup_ids


async def test_a_voided_order_failed(shop):
    tx = await shop.order()
    await shop.approve(tx)
    await shop.sim.reverse_approval(tx["providerRef"])
    (voided,) = (await shop.ask(tx)).events
    heard = shop.heard("CHECKOUT.PAYMENT-APPROVAL.REVERSED")
    assert (voided.type, voided.payment_status) == (E.PAYMENT_FAILED, S.FAILED)
    assert voided.dedup_ids == (f"order:{tx['providerRef']}:VOIDED",)
    assert same_change(voided, heard)


async def test_refunds_are_read_one_by_one_tagged_and_failed_ones_say_so(shop):
    tx = await shop.order()
    await shop.approve(tx)
    capture = await shop.capture(tx)
    params = {"refundId": RF, "amount": 500, "reason": None, "whole": False}
    ours = await send_refund(
        FollowUpRequest(FollowUp(REFUND, params), tx, shop.credentials, shop.http)
    )
    shop.sim.set_refund_outcome(capture, "PENDING")
    other = await send_refund(
        FollowUpRequest(
            FollowUp(REFUND, {**params, "refundId": "rf_other", "amount": 100}),
            tx,
            shop.credentials,
            shop.http,
        )
    )
    await shop.sim.settle_refund(other.id, "FAILED")
    read = await shop.ask(tx)
    paid, refunded, failed = read.events
    heard = shop.heard("PAYMENT.CAPTURE.REFUNDED")
    assert (refunded.type, refunded.refund) == (E.PAYMENT_REFUNDED, Refund(500, ours.id))
    assert refunded.dedup_ids == (f"refund:{ours.id}:COMPLETED",) == heard.dedup_ids[1:]
    assert same_change(refunded, heard)
    assert refunded.provider_refund is not None and refunded.provider_refund.tag == RF
    assert (failed.type, failed.refund, failed.payment_status) == (
        E.PAYMENT_REFUND_FAILED,
        Refund(100, other.id),
        None,
    )
    assert failed.attention == attention.REFUND_FAILED and failed.change == other.id
    assert [(r.id, r.state) for r in read.refunds] == [
        (ours.id, "succeeded"),
        (other.id, REFUND_FAILED),
    ]
    assert tx["providerRef"] in refunded.refs and capture in refunded.refs


async def test_a_refund_still_pending_is_read_as_history_giving_nothing_back(shop):
    """An eCheck's refund stays PENDING for days, and PayPal sends no webhook for it: read by
    asking, it moves nothing and counts nothing (the node's refund record holds its amount);
    failed after, it was never given back, completed, it counts then."""
    tx = await shop.order()
    await shop.approve(tx)
    capture = await shop.capture(tx)
    shop.sim.set_refund_outcome(capture, "PENDING")
    params = {"refundId": RF, "amount": 300, "reason": None, "whole": False}
    made = await send_refund(
        FollowUpRequest(FollowUp(REFUND, params), tx, shop.credentials, shop.http)
    )
    _, pending = (await shop.ask(tx)).events
    assert (pending.type, pending.payment_status, pending.refund) == (E.UNMATCHED, None, None)
    assert pending.provider_refund is not None and pending.provider_refund.state == "pending"
    await shop.sim.settle_refund(made.id, "COMPLETED")
    _, completed = (await shop.ask(tx)).events
    assert (completed.type, completed.refund) == (E.PAYMENT_REFUNDED, Refund(300, made.id))


async def test_a_dispute_is_read_as_what_it_is_now_under_its_webhooks_change(shop):
    tx = await shop.order()
    await shop.approve(tx)
    capture = await shop.capture(tx)
    dispute = await shop.sim.dispute(capture, stage="INQUIRY")
    (_, warned) = (await shop.ask(tx)).events
    heard = shop.heard("CUSTOMER.DISPUTE.CREATED")
    assert (warned.type, warned.change, warned.payment_status) == (
        E.PAYMENT_DISPUTE_WARNING,
        dispute,
        None,
    )
    assert warned.dedup_ids == (f"dispute:{dispute}:inquiry",) == heard.dedup_ids[1:]
    assert same_change(warned, heard)

    await shop.sim.escalate_dispute(dispute)
    (_, disputed) = (await shop.ask(tx)).events
    heard = shop.heard("CUSTOMER.DISPUTE.UPDATED")
    assert (disputed.type, disputed.payment_status, disputed.amount_minor) == (
        E.PAYMENT_DISPUTED,
        S.DISPUTED,
        1999,
    )
    assert disputed.dedup_ids == heard.dedup_ids[1:] and same_change(disputed, heard)

    await shop.sim.resolve_dispute(dispute, "RESOLVED_BUYER_FAVOUR", amount_refunded="7.50")
    (_, opened, lost) = (await shop.ask(tx)).events
    heard = shop.heard("CUSTOMER.DISPUTE.RESOLVED")
    assert opened.dedup_ids == disputed.dedup_ids  # found closed: its opening is told too
    assert (lost.type, lost.payment_status, lost.refund) == (
        E.PAYMENT_DISPUTE_CLOSED,
        S.REFUNDED,
        Refund(750, dispute),
    )
    assert lost.dedup_ids == heard.dedup_ids[1:] and same_change(lost, heard)


async def test_an_inquiry_settled_by_a_refund_closes_without_a_target(shop):
    tx = await shop.order()
    await shop.approve(tx)
    capture = await shop.capture(tx)
    dispute = await shop.sim.dispute(capture, amount="5.00", stage="INQUIRY")
    await shop.sim.resolve_dispute(dispute, "RESOLVED_BUYER_FAVOUR")
    _, refunded, closed = (await shop.ask(tx)).events
    assert (refunded.type, refunded.refund and refunded.refund.amount) == (E.PAYMENT_REFUNDED, 500)
    assert (closed.type, closed.payment_status, closed.refund) == (
        E.PAYMENT_DISPUTE_CLOSED,
        None,
        None,
    )
    assert closed.attention == attention.DISPUTE_LOST and closed.change == dispute


async def test_a_subscription_is_read_with_its_paid_cycles(shop):
    tx = await shop.order("subscription")
    page = tx["approvalUrl"].split("?", 1)[1]
    await shop.http.post(
        f"{shop.sim.url}/webapps/billing/subscriptions?{page}", data={"action": "approve"}
    )
    await shop.sim.renew(tx["providerRef"])
    read = await shop.ask(tx, {"providerRef": tx["providerRef"]})
    active, first, renewal = read.events
    assert (active.type, active.subscription_status) == (E.SUBSCRIPTION_UPDATED, S.ACTIVE)
    sales = [e for _, e in shop.sim.held if e["event_type"] == "PAYMENT.SALE.COMPLETED"]
    assert [first.change, renewal.change] == [s["resource"]["id"] for s in sales]
    heard = shop.heard("PAYMENT.SALE.COMPLETED")
    assert renewal.dedup_ids == heard.dedup_ids[1:] and same_change(renewal, heard)
    assert (renewal.type, renewal.starts_subscription, renewal.amount_minor) == (
        E.SUBSCRIPTION_PAYMENT_SUCCEEDED,
        True,
        1999,
    )
    assert renewal.subscription_ref == tx["providerRef"]
    gone = await shop.ask({**tx, "providerRef": "I-NOSUCHONE"}, None)
    assert not gone.found


async def test_a_rate_limited_read_is_asked_again_later(shop):
    tx = await shop.order()
    shop.sim.rate_limit(path=r"/v2/checkout/orders/", retry_after_s=7)
    with pytest.raises(ProviderError) as limited:
        await shop.ask(tx)
    assert limited.value.retryable and limited.value.headers["Retry-After"] == "7"
    assert (await shop.ask(tx)).found


async def test_the_event_list_is_walked_page_by_page(shop, monkeypatch):
    monkeypatch.setattr(paypal_sync, "PAGE_SIZE", 2)
    tx = await shop.order()
    await shop.approve(tx)
    capture = await shop.capture(tx)
    await shop.sim.dispute(capture)
    await send_refund(
        FollowUpRequest(
            FollowUp(REFUND, {"refundId": RF, "amount": 100, "reason": None, "whole": False}),
            tx,
            shop.credentials,
            shop.http,
        )
    )
    bodies: list[bytes] = []
    cursor: str | None = None
    pages = 0
    while True:
        page = await list_events(EventsRequest(shop.credentials, "test", 0, shop.http, cursor))
        bodies += page.bodies
        pages += 1
        cursor = page.cursor
        if cursor is None:
            break
        assert cursor.startswith("/v1/notifications/webhooks-events")
    listed = [PAYPAL.normalize(body, "test") for body in bodies]
    heard = [e["id"] for _, e in shop.sim.held]
    assert pages == 2 and sorted(e.provider_event_id for e in listed) == sorted(heard)
    assert len(heard) == 4  # approved, captured, disputed, refunded
    later = await list_events(EventsRequest(shop.credentials, "test", 4_000_000_000_000, shop.http))
    assert later.bodies == () and later.cursor is None
    # the walk's end is the walker's own now (its clock, the one its start was taken by):
    # an end before every event lists none
    ended = await list_events(EventsRequest(shop.credentials, "test", 0, shop.http, until_ms=1000))
    assert ended.bodies == () and ended.cursor is None
    ahead = await list_events(
        EventsRequest(shop.credentials, "test", 0, shop.http, until_ms=4_000_000_000_000)
    )
    assert len(ahead.bodies) == 2 and ahead.cursor is not None


async def test_a_cursor_that_is_not_the_event_list_is_refused(shop):
    with pytest.raises(ProviderError) as refused:
        await list_events(
            EventsRequest(shop.credentials, "test", 0, shop.http, "/v2/checkout/orders/X")
        )
    assert not refused.value.retryable
