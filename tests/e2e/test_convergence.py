"""Convergence through the real node (CONTRACT 2), what only Stripe's stories show: a refund
that comes before the payment it refunds is held (unmatched: it names only pi_/ch_ ids) and
takes effect when the session links it. Money after the merchant canceled is paid late for
every provider: tests/contract.

Every Stripe story in every order of its deliveries is played by tests/contract
(test_convergence_contract.py), with the stories in tests/support/stories/stripe.py.
"""

from __future__ import annotations

from typing import Any

import httpx
from support.client import bearer, post_checkout
from support.stories.stripe import Ids, paid_and_refunded_in_parts
from support.stripe_events import signed
from support.stripe_shop import StripeShop, stripe_shop


class Story:
    def __init__(self, http: httpx.AsyncClient, shop: StripeShop) -> None:
        self.http, self.shop = http, shop

    async def open(self, product: str) -> Ids:
        answer = await post_checkout(self.http, "stripe", self.shop, product)
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
