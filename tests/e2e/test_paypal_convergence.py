"""Convergence of PayPal deliveries through the real node (CONTRACT 2), what only PayPal's
stories show: every status change moves the version, even when two events share a second.

Every PayPal story in every order of its deliveries is played by tests/contract
(test_convergence_contract.py), with the stories in tests/support/stories/paypal.py."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import trio
from support import paypal_events as pe
from support.client import bearer, post_checkout
from support.paypal_shop import PayPalShop, paypal_shop
from support.stories.paypal import Ids, _capture, _e


@pytest.fixture
async def certs() -> AsyncIterator[pe.CertServer]:
    server = pe.CertServer()
    async with trio.open_nursery() as nursery:
        await nursery.start(server.run)
        yield server
        nursery.cancel_scope.cancel()


class Story:
    def __init__(self, http: httpx.AsyncClient, shop: PayPalShop, certs: pe.CertServer) -> None:
        self.http, self.shop, self.certs = http, shop, certs

    async def open(self, product: str) -> Ids:
        answer = await post_checkout(self.http, "paypal", self.shop, product)
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
