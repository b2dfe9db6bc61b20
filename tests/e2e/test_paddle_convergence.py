"""Convergence of Paddle stories through the real node (CONTRACT 2; Paddle: "We can't guarantee
the order of delivery for webhooks"): each story is played at the Paddle simulator with its
deliveries held, then delivered to the node in every order (or a sample), with redeliveries (a
new ``notification_id``, the same ``event_id``). Every order ends where in-order delivery ends
(the transaction's and the subscription's status and version), versions never go down, and each
event is stored once."""

from __future__ import annotations

import datetime as dt
import itertools
import random
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest
from support.client import bearer
from support.orders import delivery_orders
from support.paddle_shop import PaddleShop, paddle_shop

from edge.sim.paddle import PaddleSimulator
from edge.sim.paddle import objects as paddle_objects

Play = Callable[[PaddleSimulator, str], Awaitable[None]]
START = dt.datetime(2026, 11, 23, 9, 0, tzinfo=dt.UTC)


async def refunded_in_two_parts(sim: PaddleSimulator, txn: str) -> None:
    await sim.pay(txn)
    await sim.refund(txn, amount=300)
    await sim.refund(txn)


async def chargeback_reversed(sim: PaddleSimulator, txn: str) -> None:
    await sim.pay(txn)
    await sim.chargeback(txn)
    await sim.chargeback_reverse(txn)


async def declined_then_paid(sim: PaddleSimulator, txn: str) -> None:
    await sim.decline(txn)
    await sim.pay(txn)


async def declined_then_canceled(sim: PaddleSimulator, txn: str) -> None:
    await sim.decline(txn)
    await sim.cancel_transaction(txn)


async def subscription_lived(sim: PaddleSimulator, txn: str) -> None:
    await sim.pay(txn)
    sub = str(sim.transaction(txn)["subscription_id"])
    await sim.fail_renewal(sub)
    await sim.renew(sub)
    await sim.pause_subscription(sub)
    await sim.resume_subscription(sub)
    await sim.cancel_subscription(sub)


# name -> (product, play, (payment status, version), (subscription status, version) or None)
STORIES: dict[str, tuple[str, Play, tuple[str, int], tuple[str, int] | None]] = {
    "refunded in two parts": ("ten", refunded_in_two_parts, ("refunded", 4), None),
    "chargeback reversed": ("ten", chargeback_reversed, ("succeeded", 4), None),
    "declined, then paid": ("ten", declined_then_paid, ("succeeded", 2), None),
    "declined, then canceled": ("ten", declined_then_canceled, ("canceled", 2), None),
    # active -> past_due -> active -> paused -> active -> canceled
    "a subscription's life": ("pro-monthly", subscription_lived, ("succeeded", 2), ("canceled", 6)),
}


class Story:
    def __init__(self, http: httpx.AsyncClient, shop: PaddleShop) -> None:
        self.http, self.shop = http, shop

    async def play(self, product: str, play: Play) -> tuple[str, list[dict[str, Any]]]:
        """A new checkout, and the notifications its story makes, as Paddle would stamp them
        (``occurred_at`` ten seconds apart, in the order they happened)."""
        answer = await self.http.post(
            f"/api/checkout/paddle/{self.shop.project_id}",
            json={"productId": product},
            headers=bearer(self.shop.test_key),
        )
        assert answer.status_code == 201, answer.text
        sim = self.shop.sim
        sim.deliveries_paused = True
        try:
            await play(sim, answer.json()["token"])
        finally:
            sim.deliveries_paused = False
        held, sim.held = sim.held, []
        events = [event for _, event in held]
        for n, event in enumerate(events):
            at = START + dt.timedelta(seconds=10 * n)
            event["occurred_at"] = at.isoformat(timespec="microseconds").replace("+00:00", "Z")
        return answer.json()["txId"], events

    async def deliver(self, tx: str, events: list[dict[str, Any]], order: list[int]) -> list[Any]:
        """Deliver in this order (a repeat as a redelivery); (version, sub version, status)
        after each."""
        seen, sent = [], set()
        for index in order:
            event = events[index]
            if index in sent:
                event = paddle_objects.redelivered(event)
            sent.add(index)
            body = paddle_objects.body_of(event)
            answer = await self.http.post(
                f"/webhook/paddle/{self.shop.project_id}",
                content=body,
                headers=self.shop.sim.sign_headers(self.shop.webhook_secret, body),
            )
            assert answer.status_code == 200, answer.text
            status = await self.status(tx)
            sub_version = 0
            if status["subscriptionId"]:
                sub_version = (await self.status(status["subscriptionId"]))["version"]
            seen.append((status["version"], sub_version, status["status"]))
        return seen

    async def status(self, item: str) -> dict[str, Any]:
        answer = await self.http.get(
            f"/status/{self.shop.project_id}/{item}", headers=bearer(self.shop.test_key)
        )
        return dict(answer.json())

    async def stored(self, tx: str) -> list[dict[str, Any]]:
        answer = await self.http.get(
            f"/api/projects/{self.shop.project_id}/transactions/{tx}",
            headers=bearer(self.shop.test_key),
        )
        return [e for e in answer.json()["events"] if e["providerEventId"]]


@pytest.mark.parametrize("name", STORIES)
async def test_every_order_ends_where_in_order_delivery_ends(admin, http, paddle, name):
    product, play, end, sub_end = STORIES[name]
    shop = await paddle_shop(admin, paddle)
    story = Story(http, shop)
    tx, events = await story.play(product, play)
    in_order = await story.deliver(tx, events, list(range(len(events))))
    final = in_order[-1]
    assert (final[2], final[0]) == end
    if sub_end:
        tx_status = await story.status(tx)
        sub = await story.status(tx_status["subscriptionId"])
        assert (sub.get("status"), sub.get("version")) == sub_end, (tx_status, sub, in_order)
    rng = random.Random(name)
    for order in delivery_orders(len(events), rng, samples=8):
        tx, events = await story.play(product, play)
        seen = await story.deliver(tx, events, order)
        assert seen[-1] == final, (name, order, seen)
        assert all(a[0] <= b[0] and a[1] <= b[1] for a, b in itertools.pairwise(seen)), (
            order,
            seen,
        )
        ids = {e["event_id"] for e in events}
        stored = [e for e in await story.stored(tx) if e["providerEventId"] in ids]
        assert len(stored) == len(ids), (order, stored)  # each once, however often delivered
