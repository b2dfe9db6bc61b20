"""Convergence through the real node (CONTRACT 2): for each Stripe event story, every order and
duplication of its deliveries ends in the status and version that in-order delivery ends in, and
the version seen after each delivery never decreases.

The events are built in Stripe's shapes (tests/fixtures) with the ids a real story shares: the
session is the one the node created (the checkout's ``providerRef``) and names the payment
intent; charges and disputes name only the payment intent and the charge (no metadata), so an
event that comes before the session is ``unmatched`` until the session links the payment
intent. Subscription events name only the subscription. Every amount is the checkout's own
(19.99 EUR for the book, 9.00 EUR a month for Pro), in Stripe's units: the node compares what a
payment reports with what the checkout asked (CONTRACT 4.3).
"""

from __future__ import annotations

import itertools
import json
import random
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from support.client import bearer
from support.orders import delivery_orders
from support.stripe_events import signed, stripe_object
from support.stripe_shop import StripeShop, stripe_shop

T0 = 1_790_000_000  # seconds: every story starts here
BOOK, PRO = 1999, 900  # what the shop's checkouts ask, in cents of EUR (support.stripe_shop)


@dataclass
class Ids:
    tx: str
    session: str
    pi: str
    ch: str
    sub: str


def _event(n: int, ids: Ids, stripe_type: str, at_s: int, obj: dict[str, Any]) -> bytes:
    envelope = stripe_object("event", id=f"evt_{ids.tx[-10:]}_{n}", type=stripe_type)
    envelope.update(created=T0 + at_s, data={"object": obj}, livemode=False)
    return json.dumps(envelope).encode()


def _session(ids: Ids, payment_status: str, subscription: bool = False, status: str = "complete"):
    return stripe_object(
        "checkout_session",
        id=ids.session,
        client_reference_id=ids.tx,
        payment_intent=None if subscription else ids.pi,
        payment_status=payment_status,
        status=status,
        mode="subscription" if subscription else "payment",
        subscription=ids.sub if subscription else None,
        customer="cus_conv" if subscription else None,
        metadata={},
        amount_subtotal=PRO if subscription else BOOK,
        amount_total=PRO if subscription else BOOK,
        currency="eur",
    )


def _charge(ids: Ids, refunded: int) -> dict[str, Any]:
    return stripe_object(
        "charge",
        id=ids.ch,
        payment_intent=ids.pi,
        amount=BOOK,
        amount_refunded=refunded,
        refunded=refunded >= BOOK,
        currency="eur",
        metadata={},
    )


def _dispute(ids: Ids, status: str) -> dict[str, Any]:
    return stripe_object(
        "dispute",
        charge=ids.ch,
        payment_intent=ids.pi,
        status=status,
        metadata={},
        amount=BOOK,
        currency="eur",
    )


def _subscription(ids: Ids, status: str, period_end: int) -> dict[str, Any]:
    sub = stripe_object("subscription", id=ids.sub, status=status, metadata={}, currency="eur")
    item = sub["items"]["data"][0]
    item["current_period_end"] = T0 + period_end
    item["price"].update(unit_amount=PRO, currency="eur")
    return sub


def _invoice(ids: Ids, n: int, reason: str, period_end: int) -> dict[str, Any]:
    invoice = stripe_object(
        "invoice",
        id=f"in_conv{n}_{ids.tx[-8:]}",
        billing_reason=reason,
        amount_due=PRO,
        amount_paid=PRO,
        currency="eur",
    )
    invoice["parent"]["subscription_details"] = {"metadata": {}, "subscription": ids.sub}
    line = invoice["lines"]["data"][0]
    line["parent"]["subscription_item_details"]["subscription"] = ids.sub
    line["period"]["end"] = T0 + period_end
    return invoice


def paid_and_refunded_in_parts(ids: Ids) -> list[bytes]:
    return [
        _event(1, ids, "checkout.session.completed", 0, _session(ids, "paid")),
        _event(2, ids, "charge.refunded", 10, _charge(ids, 600)),
        _event(3, ids, "charge.refunded", 20, _charge(ids, 1200)),
        _event(4, ids, "charge.refunded", 30, _charge(ids, BOOK)),
    ]


def disputed(outcome: str):
    def story(ids: Ids) -> list[bytes]:
        return [
            _event(1, ids, "checkout.session.completed", 0, _session(ids, "paid")),
            _event(2, ids, "charge.dispute.created", 10, _dispute(ids, "needs_response")),
            _event(3, ids, "charge.dispute.closed", 20, _dispute(ids, outcome)),
        ]

    return story


def async_failed(ids: Ids) -> list[bytes]:
    return [
        _event(1, ids, "checkout.session.completed", 0, _session(ids, "unpaid")),
        _event(2, ids, "checkout.session.async_payment_failed", 60, _session(ids, "unpaid")),
    ]


def expired(ids: Ids) -> list[bytes]:
    session = _session(ids, "unpaid", status="expired")
    return [_event(1, ids, "checkout.session.expired", 0, session)]


def subscription(ids: Ids) -> list[bytes]:
    month = 30 * 86400
    created, paid = _subscription(ids, "active", month), _session(ids, "paid", subscription=True)
    first, failed = _invoice(ids, 1, "subscription_create", month), _invoice(ids, 2, "x", 2 * month)
    past_due, again = _subscription(ids, "past_due", 2 * month), _invoice(ids, 3, "x", 2 * month)
    ended = _subscription(ids, "canceled", 2 * month)
    return [
        _event(1, ids, "customer.subscription.created", 0, created),
        _event(2, ids, "checkout.session.completed", 0, paid),
        _event(3, ids, "invoice.paid", 0, first),
        _event(4, ids, "invoice.payment_failed", month, failed),
        _event(5, ids, "customer.subscription.updated", month, past_due),
        _event(6, ids, "invoice.paid", month + 3600, again),
        _event(7, ids, "customer.subscription.deleted", month + 7200, ended),
    ]


STORIES = {
    "refunded in parts": ("book", paid_and_refunded_in_parts, ("refunded", 4)),
    "dispute won": ("book", disputed("won"), ("succeeded", 4)),
    "dispute lost": ("book", disputed("lost"), ("refunded", 4)),
    "async failed": ("book", async_failed, ("failed", 3)),
    "expired": ("book", expired, ("expired", 2)),
    "subscription": ("pro-monthly", subscription, ("succeeded", 2)),
}
SUBSCRIPTION_END = ("canceled", 4)  # active -> past_due -> active -> canceled


class Story:
    def __init__(self, http: httpx.AsyncClient, shop: StripeShop) -> None:
        self.http, self.shop = http, shop

    async def open(self, product: str) -> Ids:
        answer = await self.http.post(
            f"/api/checkout/stripe/{self.shop.project_id}",
            json={"productId": product},
            headers=bearer(self.shop.test_key),
        )
        assert answer.status_code == 201, answer.text
        tx_id = answer.json()["txId"]
        session = answer.json()["url"].rsplit("/", 1)[-1]
        tail = tx_id[-12:].lower()
        return Ids(tx_id, session, f"pi_conv{tail}", f"ch_conv{tail}", f"sub_conv{tail}")

    async def deliver(self, ids: Ids, bodies: list[bytes]) -> list[tuple[int, int, str]]:
        """Deliver in this order; (version, subscription version, status) after each."""
        seen = []
        for body in bodies:
            answer = await self.http.post(
                f"/webhook/stripe/{self.shop.project_id}",
                content=body,
                headers=signed(body, self.shop.webhook_secret),
            )
            assert answer.status_code == 200, answer.text
            status = await self.status(ids.tx)
            sub_version = 0
            if status["subscriptionId"]:
                sub_version = (await self.status(status["subscriptionId"]))["version"]
            seen.append((status["version"], sub_version, status["status"]))
        return seen

    async def status(self, item_id: str) -> dict[str, Any]:
        return dict(
            (
                await self.http.get(
                    f"/status/{self.shop.project_id}/{item_id}",
                    headers=bearer(self.shop.test_key),
                )
            ).json()
        )

    async def feed(self) -> list[dict[str, Any]]:
        answer = await self.http.get(
            f"/api/projects/{self.shop.project_id}/events?limit=500",
            headers=bearer(self.shop.test_key),
        )
        return list(answer.json()["items"])

    async def events(self, tx_id: str) -> list[dict[str, Any]]:
        tx = await self.http.get(
            f"/api/projects/{self.shop.project_id}/transactions/{tx_id}",
            headers=bearer(self.shop.test_key),
        )
        return list(tx.json()["events"])


@pytest.mark.parametrize("name", STORIES)
async def test_every_order_ends_where_in_order_delivery_ends(admin, http, sim, name):
    product, build, end = STORIES[name]
    shop = await stripe_shop(admin, sim)
    story = Story(http, shop)
    ids = await story.open(product)
    in_order = await story.deliver(ids, build(ids))
    final = in_order[-1]
    assert (final[2], final[0]) == end
    if name == "subscription":
        sub = await story.status((await story.status(ids.tx))["subscriptionId"])
        assert (sub["status"], sub["version"]) == SUBSCRIPTION_END
    rng = random.Random(name)
    for order in delivery_orders(len(in_order), rng, samples=12):
        ids = await story.open(product)
        bodies = build(ids)
        seen = await story.deliver(ids, [bodies[i] for i in order])
        assert seen[-1] == final, (name, order, seen)
        assert all(a[0] <= b[0] and a[1] <= b[1] for a, b in itertools.pairwise(seen)), (
            order,
            seen,
        )
        events = await story.events(ids.tx)
        # every delivery stored once, none left unmatched once its story is complete
        assert len(events) == len(bodies) + 1, events  # and the node's checkout.created
        assert not [e for e in events if e["type"] == "unmatched"], (order, events)
        held = [e for e in events if e["appliedAt"] is None and e["type"] != "checkout.created"]
        assert all(e["type"] != "payment.paid_late" for e in held)


async def test_a_held_refund_takes_effect_with_the_payment_and_says_when(admin, http, sim):
    shop = await stripe_shop(admin, sim)
    story = Story(http, shop)
    ids = await story.open("book")
    paid, _, _, refunded = paid_and_refunded_in_parts(ids)
    await story.deliver(ids, [refunded])
    (early,) = [e for e in await story.feed() if e["type"] == "unmatched"]
    assert early["appliedAt"] is None and early["txId"] is None  # names only pi_/ch_ ids
    await story.deliver(ids, [paid])
    events = {e["id"]: e for e in await story.events(ids.tx)}
    matched = events[early["id"]]
    assert (matched["type"], matched["txId"]) == ("payment.refunded", ids.tx)
    assert matched["appliedAt"] is not None and matched["receivedAt"] == early["receivedAt"]
    assert (await story.status(ids.tx))["status"] == "refunded"


async def test_money_after_the_merchant_canceled_is_paid_late(admin, http, sim):
    shop = await stripe_shop(admin, sim)
    story = Story(http, shop)
    ids = await story.open("book")
    canceled = await http.post(
        f"/api/projects/{shop.project_id}/transactions/{ids.tx}/cancel",
        headers=bearer(shop.test_key),
    )
    assert canceled.json()["status"] == "canceled"
    assert canceled.json()["needsAttention"] is False
    await story.deliver(ids, paid_and_refunded_in_parts(ids)[:1])
    tx = (
        await http.get(
            f"/api/projects/{shop.project_id}/transactions/{ids.tx}",
            headers=bearer(shop.test_key),
        )
    ).json()
    assert (tx["status"], tx["version"], tx["needsAttention"]) == ("canceled", 2, True)
    late = [e for e in tx["events"] if e["type"] == "payment.paid_late"]
    assert len(late) == 1 and late[0]["amount"] is not None and late[0]["appliedAt"] is None
