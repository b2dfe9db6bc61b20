"""Convergence of PayPal stories through the real node (CONTRACT 2): every event of the PayPal
table, in every order (or a sample) and with duplicates, ends where in-order delivery ends, and
the version seen after each delivery never decreases.

Checkouts are opened at the PayPal simulator; the deliveries are built by hand
(support.paypal_events) so each story can be shuffled, on the order or subscription the node
created there (the checkout's ``providerRef``): the node matches by the PayPal objects it
created or linked, never by ``custom_id`` (CONTRACT 4.3). Refunds carry no ``custom_id`` (one
made in PayPal's own dashboard has none): they match through their capture, and wait when they
come before it. Every amount is the checkout's own (10.00 EUR, 9.00 EUR a month)."""

from __future__ import annotations

import itertools
import random
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
import trio
from support import paypal_events as pe
from support.client import bearer
from support.orders import delivery_orders
from support.paypal_shop import PayPalShop, paypal_shop

MONTH = 30 * 86400


@dataclass
class Ids:
    tx: str
    order: str
    capture: str
    sub: str


@pytest.fixture
async def certs() -> AsyncIterator[pe.CertServer]:
    server = pe.CertServer()
    async with trio.open_nursery() as nursery:
        await nursery.start(server.run)
        yield server
        nursery.cancel_scope.cancel()


def _e(ids: Ids, n: int, event_type: str, at_s: int, resource: dict[str, Any]) -> bytes:
    return pe.event(f"WH-{ids.tx[-10:]}-{n}", event_type, at_s, resource)


def _order(ids: Ids, status: str) -> dict[str, Any]:
    return pe.order(ids.order, ids.tx, status)


def _capture(ids: Ids, status: str) -> dict[str, Any]:
    return pe.capture(ids.capture, ids.order, ids.tx, status)


def refunded_in_parts(ids: Ids) -> list[bytes]:
    def part(n: int, value: str, total: str) -> dict[str, Any]:
        body = pe.refund(f"R{n}{ids.capture}", ids.capture, ids.tx, value, total)
        del body["custom_id"]
        return body

    return [
        _e(ids, 1, "CHECKOUT.ORDER.APPROVED", 0, _order(ids, "APPROVED")),
        _e(ids, 2, "PAYMENT.CAPTURE.COMPLETED", 10, _capture(ids, "COMPLETED")),
        _e(ids, 3, "PAYMENT.CAPTURE.REFUNDED", 20, part(3, "3.00", "3.00")),
        _e(ids, 4, "PAYMENT.CAPTURE.REFUNDED", 30, part(4, "3.00", "6.00")),
        _e(ids, 5, "PAYMENT.CAPTURE.REFUNDED", 40, part(5, "4.00", "10.00")),
    ]


def disputed(outcome: str) -> Callable[[Ids], list[bytes]]:
    def story(ids: Ids) -> list[bytes]:
        return [
            _e(ids, 1, "PAYMENT.CAPTURE.COMPLETED", 0, _capture(ids, "COMPLETED")),
            _e(ids, 2, "CUSTOMER.DISPUTE.CREATED", 10, pe.dispute(ids.capture, ids.tx)),
            _e(ids, 3, "CUSTOMER.DISPUTE.RESOLVED", 20, pe.dispute(ids.capture, ids.tx, outcome)),
        ]

    return story


def pending_then_declined(ids: Ids) -> list[bytes]:
    return [
        _e(ids, 1, "CHECKOUT.ORDER.APPROVED", 0, _order(ids, "APPROVED")),
        _e(ids, 2, "PAYMENT.CAPTURE.PENDING", 10, _capture(ids, "PENDING")),
        _e(ids, 3, "PAYMENT.CAPTURE.DECLINED", 20, _capture(ids, "DECLINED")),
    ]


def pending_then_denied_after_a_retry(ids: Ids) -> list[bytes]:
    return [
        _e(ids, 1, "PAYMENT.CAPTURE.PENDING", 0, _capture(ids, "PENDING")),
        _e(ids, 2, "PAYMENT.CAPTURE.DENIED", 60, _capture(ids, "DECLINED")),
    ]


def reversed_after_capture(ids: Ids) -> list[bytes]:
    reversal = pe.refund(f"R{ids.capture}", ids.capture, ids.tx, "10.00", "10.00")
    return [
        _e(ids, 1, "PAYMENT.CAPTURE.COMPLETED", 0, _capture(ids, "COMPLETED")),
        _e(ids, 2, "PAYMENT.CAPTURE.REVERSED", 86400, reversal),
    ]


def approval_reversed(ids: Ids) -> list[bytes]:
    return [
        _e(ids, 1, "CHECKOUT.ORDER.APPROVED", 0, _order(ids, "APPROVED")),
        _e(ids, 2, "CHECKOUT.PAYMENT-APPROVAL.REVERSED", 10, _order(ids, "APPROVED")),
    ]


def subscription(ids: Ids) -> list[bytes]:
    def sub(status: str, next_s: int) -> dict[str, Any]:
        return pe.subscription(ids.sub, ids.tx, status, next_s)

    return [
        _e(ids, 1, "BILLING.SUBSCRIPTION.CREATED", 0, sub("APPROVAL_PENDING", MONTH)),
        _e(ids, 2, "BILLING.SUBSCRIPTION.ACTIVATED", 1, sub("ACTIVE", MONTH)),
        _e(ids, 3, "PAYMENT.SALE.COMPLETED", 2, pe.sale(f"S1{ids.order}", ids.sub)),
        _e(ids, 4, "BILLING.SUBSCRIPTION.PAYMENT.FAILED", MONTH, sub("ACTIVE", 2 * MONTH)),
        _e(ids, 5, "PAYMENT.SALE.COMPLETED", MONTH + 3600, pe.sale(f"S2{ids.order}", ids.sub)),
        _e(ids, 6, "BILLING.SUBSCRIPTION.CANCELLED", MONTH + 7200, sub("CANCELLED", 2 * MONTH)),
    ]


def subscription_suspended_and_expired(ids: Ids) -> list[bytes]:
    def sub(status: str, next_s: int) -> dict[str, Any]:
        return pe.subscription(ids.sub, ids.tx, status, next_s)

    return [
        _e(ids, 1, "PAYMENT.SALE.COMPLETED", 0, pe.sale(f"S1{ids.order}", ids.sub)),
        _e(ids, 2, "BILLING.SUBSCRIPTION.SUSPENDED", 10, sub("SUSPENDED", MONTH)),
        _e(ids, 3, "BILLING.SUBSCRIPTION.UPDATED", 20, sub("ACTIVE", MONTH)),
        _e(ids, 4, "BILLING.SUBSCRIPTION.EXPIRED", 12 * MONTH, sub("EXPIRED", 12 * MONTH)),
    ]


STORIES = {
    "refunded in parts": ("ten", refunded_in_parts, ("refunded", 4), None),
    "dispute won": ("ten", disputed("RESOLVED_SELLER_FAVOUR"), ("succeeded", 4), None),
    "dispute lost": ("ten", disputed("RESOLVED_BUYER_FAVOUR"), ("refunded", 4), None),
    "pending then declined": ("ten", pending_then_declined, ("failed", 3), None),
    "approval reversed": ("ten", approval_reversed, ("failed", 2), None),
    "pending then denied": ("ten", pending_then_denied_after_a_retry, ("failed", 3), None),
    "reversed after capture": ("ten", reversed_after_capture, ("refunded", 3), None),
    # active -> paused -> active -> canceled
    "subscription suspended and expired": (
        "pro-monthly",
        subscription_suspended_and_expired,
        ("succeeded", 2),
        ("canceled", 4),
    ),
    # active -> past_due -> active -> canceled
    "subscription": ("pro-monthly", subscription, ("succeeded", 2), ("canceled", 4)),
}


class Story:
    def __init__(self, http: httpx.AsyncClient, shop: PayPalShop, certs: pe.CertServer) -> None:
        self.http, self.shop, self.certs = http, shop, certs

    async def open(self, product: str) -> Ids:
        answer = await self.http.post(
            f"/api/checkout/paypal/{self.shop.project_id}",
            json={"productId": product},
            headers=bearer(self.shop.test_key),
        )
        assert answer.status_code == 201, answer.text
        tx_id = answer.json()["txId"]
        tail = tx_id[-12:].upper()
        tx = await self.http.get(
            f"/api/projects/{self.shop.project_id}/transactions/{tx_id}",
            headers=bearer(self.shop.test_key),
        )
        made = tx.json()["providerRef"]  # the order, or the subscription, made at PayPal
        assert made
        if product == "pro-monthly":
            return Ids(tx_id, f"O{tail}", f"C{tail}", made)
        return Ids(tx_id, made, f"C{tail}", f"I-{tail}")

    async def deliver(self, ids: Ids, bodies: list[bytes]) -> list[tuple[int, int, str]]:
        """Deliver in this order; (version, subscription version, status) after each."""
        seen = []
        for body in bodies:
            answer = await self.http.post(
                f"/webhook/paypal/{self.shop.project_id}",
                content=body,
                headers=self.certs.headers(body, self.shop.webhook_id),
            )
            assert answer.status_code == 200, answer.text
            status = await self.status(ids.tx)
            sub_version = 0
            if status["subscriptionId"]:
                sub_version = (await self.status(status["subscriptionId"]))["version"]
            seen.append((status["version"], sub_version, status["status"]))
        return seen

    async def status(self, item_id: str) -> dict[str, Any]:
        answer = await self.http.get(
            f"/status/{self.shop.project_id}/{item_id}", headers=bearer(self.shop.test_key)
        )
        return dict(answer.json())

    async def events(self, tx_id: str) -> list[dict[str, Any]]:
        tx = await self.http.get(
            f"/api/projects/{self.shop.project_id}/transactions/{tx_id}",
            headers=bearer(self.shop.test_key),
        )
        return list(tx.json()["events"])


@pytest.mark.parametrize("name", STORIES)
async def test_every_order_ends_where_in_order_delivery_ends(admin, http, paypal, certs, name):
    product, build, end, sub_end = STORIES[name]
    shop = await paypal_shop(admin, paypal, certHosts=["127.0.0.1"])
    await admin.product(shop.project_id, "ten", name="Ten", amount=10, currency="EUR")
    story = Story(http, shop, certs)
    ids = await story.open(product)
    in_order = await story.deliver(ids, build(ids))
    final = in_order[-1]
    assert (final[2], final[0]) == end
    if sub_end:
        sub = await story.status((await story.status(ids.tx))["subscriptionId"])
        assert (sub["status"], sub["version"]) == sub_end
    rng = random.Random(name)
    for order in delivery_orders(len(in_order), rng, samples=10):
        ids = await story.open(product)
        bodies = build(ids)
        seen = await story.deliver(ids, [bodies[i] for i in order])
        assert seen[-1] == final, (name, order, seen)
        assert all(a[0] <= b[0] and a[1] <= b[1] for a, b in itertools.pairwise(seen)), (
            order,
            seen,
        )
        # the simulator's own BILLING.SUBSCRIPTION.CREATED of the checkout is not the story's
        events = [
            e
            for e in await story.events(ids.tx)
            if (e["providerEventId"] or "").startswith(f"WH-{ids.tx[-10:]}-")
            or e["type"] == "checkout.created"
        ]
        assert len(events) == len(bodies) + 1, events  # each once, and checkout.created
        assert not [e for e in events if e["type"] == "unmatched"], (order, events)


async def test_every_status_change_moves_the_version_even_when_two_events_share_a_second(
    admin, http, paypal, certs
):
    shop = await paypal_shop(admin, paypal, certHosts=["127.0.0.1"])
    await admin.product(shop.project_id, "ten", name="Ten", amount=10, currency="EUR")
    story = Story(http, shop, certs)
    ids = await story.open("ten")
    part = pe.refund(f"R{ids.capture}", ids.capture, ids.tx, "3.00", "3.00")
    seen = await story.deliver(
        ids,
        [
            _e(ids, 1, "PAYMENT.CAPTURE.COMPLETED", 0, _capture(ids, "COMPLETED")),
            _e(ids, 2, "PAYMENT.CAPTURE.REFUNDED", 10, part),
            _e(ids, 3, "CUSTOMER.DISPUTE.CREATED", 10, pe.dispute(ids.capture, ids.tx)),
        ],
    )
    statuses = [(status, version) for version, _, status in seen]
    assert statuses[:2] == [("succeeded", 2), ("partially_refunded", 3)]
    assert statuses[2] == ("disputed", 4), statuses
