"""Paddle refunds through the real node, made as Paddle makes them (CONTRACT 4.3: refunds are
summed by amount, whatever the provider calls them).

A refund is created ``pending_approval`` (``adjustment.created``) and counts once Paddle approves
it (``adjustment.updated``, approved): openapi.yaml POST /adjustments ("Most refunds for live
accounts are created with the status of pending_approval until reviewed by Paddle") and the
``adjustment.updated`` event ("On review, they move to approved or rejected"). Its ``type`` is
``full``, ``partial`` (the default, with items, each item full or partial) or, in the
notifications, null: openapi.yaml ``adjustment_type`` and the webhooks' ``type: oneOf
[adjustment_type, null]``; PaddleHQ/paddle-python-sdk@48c8cc04
tests/Unit/Entities/_fixtures/notification/entity/adjustment.created.json and
adjustment.updated.json (``"type": null``, items of type partial). A whole refund may be made
by items: Paddle changelog 2024-12-05 (developer.paddle.com/changelog/2024/
refund-credit-full-total: "Previously, to refund or credit all of a transaction ... build an
array of adjustment items"). The money given back is ``totals.total`` ("Total after tax",
openapi.yaml ``adjustment_totals``). Every order of these deliveries is checked in
test_paddle_convergence.py."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest
from support.client import bearer, post_checkout
from support.paddle_shop import PaddleShop, paddle_shop

from edge.sim.paddle import PaddleSimulator

# (the simulator, the Paddle transaction, its one line item) -> a refund's id
Refund = Callable[[PaddleSimulator, str, str], Awaitable[str]]


def full(sim: PaddleSimulator, txn: str, line: str) -> Awaitable[str]:
    return sim.refund(txn)


def whole_by_items(sim: PaddleSimulator, txn: str, line: str) -> Awaitable[str]:
    return sim.refund(txn, items=[{"item_id": line, "type": "full"}])


def whole_null_type(sim: PaddleSimulator, txn: str, line: str) -> Awaitable[str]:
    return sim.refund(txn, 1000, null_type=True)


def part(amount: int, null_type: bool = False) -> Refund:
    def refund(sim: PaddleSimulator, txn: str, line: str) -> Awaitable[str]:
        item = {"item_id": line, "type": "partial", "amount": str(amount)}
        return sim.refund(txn, items=[item], null_type=null_type)

    return refund


# name -> the refunds, one after the other, and the status after each (a 10.00 EUR checkout)
STORIES: dict[str, list[tuple[Refund, str]]] = {
    "full": [(full, "refunded")],
    "whole, by items (type partial, the line in full)": [(whole_by_items, "refunded")],
    "whole, type null": [(whole_null_type, "refunded")],
    "in parts that add up to the total": [
        (part(300), "partially_refunded"),
        (part(300), "partially_refunded"),
        (part(400), "refunded"),
    ],
    "in parts, type null": [
        (part(250, null_type=True), "partially_refunded"),
        (part(750, null_type=True), "refunded"),
    ],
    "a part, then the rest in full": [(part(300), "partially_refunded"), (full, "refunded")],
    "a part, then the line in full": [
        (part(999), "partially_refunded"),
        (whole_by_items, "refunded"),
    ],
    "short of the total": [(part(300), "partially_refunded"), (part(600), "partially_refunded")],
}


async def paid_checkout(http: httpx.AsyncClient, shop: PaddleShop) -> tuple[str, str, str]:
    answer = await post_checkout(http, "paddle", shop, "ten")
    assert answer.status_code == 201, answer.text
    txn = answer.json()["token"]
    await shop.sim.pay(txn)
    line = shop.sim.transaction(txn)["details"]["line_items"][0]["id"]
    return answer.json()["txId"], txn, line


async def record(http: httpx.AsyncClient, shop: PaddleShop, tx_id: str) -> dict[str, Any]:
    answer = await http.get(
        f"/api/projects/{shop.project_id}/transactions/{tx_id}", headers=bearer(shop.test_key)
    )
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


@pytest.mark.parametrize("name", STORIES)
async def test_refunds_end_where_their_amounts_say(admin, http, paddle, name):
    shop = await paddle_shop(admin, paddle)
    tx_id, txn, line = await paid_checkout(http, shop)
    assert (await record(http, shop, tx_id))["status"] == "succeeded"
    for refund, status in STORIES[name]:
        await refund(paddle, txn, line)
        tx = await record(http, shop, tx_id)
        assert tx["status"] == status, (name, tx)
    assert tx["needsAttention"] is False
    # each approved refund is in the feed under the word its amount earned
    words = [
        e["type"]
        for e in tx["events"]
        if e["type"].startswith("payment.") and "refund" in e["type"]
    ]
    assert len(words) == len(STORIES[name])
    assert words[-1] == f"payment.{STORIES[name][-1][1]}"


async def test_a_refund_counts_only_once_paddle_approves_it(admin, http, paddle):
    shop = await paddle_shop(admin, paddle)
    tx_id, txn, _ = await paid_checkout(http, shop)
    waiting = await paddle.refund(txn, approve=False)
    tx = await record(http, shop, tx_id)
    assert (tx["status"], tx["version"]) == ("succeeded", 2)  # pending_approval: history only
    await paddle.reject_refund(waiting)
    assert (await record(http, shop, tx_id))["status"] == "succeeded"
    part = await paddle.refund(txn, 400, approve=False)
    assert (await record(http, shop, tx_id))["status"] == "succeeded"
    await paddle.approve_refund(part)
    assert (await record(http, shop, tx_id))["status"] == "partially_refunded"
