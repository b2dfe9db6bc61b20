"""Convergence of Paddle deliveries through the real node (CONTRACT 2; Paddle: "We can't
guarantee the order of delivery for webhooks"), what only Paddle's stories show: a canceled
and a paid transaction, made by hand because Paddle makes neither pair, need attention in both
orders.

Every story the Paddle simulator makes, in every order of its deliveries and with
redeliveries, is played by tests/contract (test_convergence_contract.py), with the stories in
tests/support/stories/paddle.py."""

from __future__ import annotations

import copy
import datetime as dt
import itertools
from typing import Any

import httpx
import pytest
from support.client import bearer, post_checkout
from support.paddle_shop import PaddleShop, paddle_shop
from support.stories.paddle import START

from edge.sim.paddle import objects as paddle_objects


class Story:
    def __init__(self, http: httpx.AsyncClient, shop: PaddleShop) -> None:
        self.http, self.shop = http, shop

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

    async def stored(self, ids: set[str]) -> list[dict[str, Any]]:
        """The project's stored events of these Paddle event ids, matched or not (the feed,
        every page)."""
        found, after = [], None
        while True:
            answer = await self.http.get(
                f"/api/projects/{self.shop.project_id}/events",
                params={"limit": 100, **({"after": after} if after else {})},
                headers=bearer(self.shop.test_key),
            )
            page = answer.json()
            found += [e for e in page["items"] if e["providerEventId"] in ids]
            if not page["hasMore"]:
                return found
            after = page["next"]


@pytest.mark.parametrize(
    "canceled_first", [True, False], ids=["canceled, then paid", "paid, then canceled"]
)
async def test_a_canceled_and_paid_transaction_ends_paid_in_every_order(
    admin, http, paddle, canceled_first
):
    """Paddle does not cancel a paid transaction nor take payment for a canceled one (openapi.yaml
    PATCH /transactions/{transaction_id}; developer.paddle.com/errors/transactions/
    transaction_invalid_status_change and transaction_not_ready_cannot_process_payment; the
    simulator refuses both, tests/sim/test_paddle_sim.py). So the pair is made by hand:
    ``transaction.canceled`` and ``transaction.paid`` for the node's own transaction. A provider
    that took the money cannot also have canceled the checkout: the payment wins in every
    delivery order, whatever the timestamps say (CONTRACT 4.3a: Paddle's canceled/paid pair
    converges), and the merchant is told (``contradicted``)."""
    shop = await paddle_shop(admin, paddle)
    story = Story(http, shop)
    ends: set[tuple[int, int, str]] = set()
    for order in ([0, 1], [1, 0], [0, 1, 0], [1, 0, 1]):
        answer = await post_checkout(http, "paddle", shop, "ten")
        tx, txn = answer.json()["txId"], paddle.transaction(answer.json()["token"])
        canceled = copy.deepcopy(txn)
        canceled.update(status="canceled", updated_at=paddle_objects.now_iso())
        paid = copy.deepcopy(txn)
        paid.update(customer_id=paddle_objects.paddle_id("ctm"), status="ready")
        paid["payments"].insert(0, paddle_objects.payment_attempt(paid, declined=False))
        paddle_objects.settle(paid, "paid")
        pair = [("transaction.canceled", canceled), ("transaction.paid", paid)]
        events = [paddle_objects.envelope(t, data) for t, data in pair]
        stamps = [START, START + dt.timedelta(seconds=10)]
        for event, at in zip(events, stamps if canceled_first else stamps[::-1], strict=True):
            event["occurred_at"] = at.isoformat(timespec="microseconds").replace("+00:00", "Z")
        seen = await story.deliver(tx, events, order)
        assert all(a[0] <= b[0] for a, b in itertools.pairwise(seen)), (order, seen)
        assert seen[-1][2] == "succeeded", (order, seen)
        ends.add(seen[-1])
        record = (
            await http.get(
                f"/api/projects/{shop.project_id}/transactions/{tx}",
                headers=bearer(shop.test_key),
            )
        ).json()
        assert record["needsAttention"] is True, (order, record)
        codes = {flag["code"] for flag in record["attention"]}
        assert "contradicted" in codes and "paid_late" not in codes, (order, codes)
        stored = await story.stored({e["event_id"] for e in events})
        assert len(stored) == 2 and {e["txId"] for e in stored} == {tx}
    # the same status in every order (the version counts the moves made on the way: one more
    # where the cancel came first)
    assert {end[2] for end in ends} == {"succeeded"}, ends
