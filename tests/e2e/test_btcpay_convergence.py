"""Convergence of BTCPay stories through the real node (CONTRACT 2): every invoice story of the
BTCPay table, in every order (or a sample), with retries and redeliveries (new ``deliveryId``,
the first one's ``originalDeliveryId``), ends where in-order delivery ends: the same status,
version and ``needsAttention``; the version seen after each delivery never decreases; and each
event is stored once.

Checkouts are opened at the BTCPay simulator; the deliveries are built by hand (the simulator's
own object builders) so each story can be shuffled."""

from __future__ import annotations

import itertools
import random
from typing import Any

import httpx
import pytest
from support.btcpay_shop import BTCPayShop, btcpay_shop
from support.client import bearer
from support.orders import delivery_orders

from edge.providers.btcpay.signature import sign_header
from edge.sim.btcpay import objects

# (BTCPay type, seconds after the invoice was made, the type's own fields)
Story = list[tuple[str, int, dict[str, Any]]]
PAID = {"afterExpiration": False, "paymentMethodId": "BTC-CHAIN"}
LATE = {"afterExpiration": True, "paymentMethodId": "BTC-CHAIN"}

SETTLED = {"manuallyMarked": False, "overPaid": False}
MARKED_SETTLED = {"manuallyMarked": True, "overPaid": False}
# Marking by hand sends one InvoiceSettled or InvoiceInvalid with manuallyMarked true and nothing
# else, in every state BTCPay allows it (btcpayserver@03345c28 InvoiceEntity.cs:804-822,
# InvoiceRepository.cs:630-676, InvoiceTriggerProvider.cs:152-159); the simulator's
# tests/sim/test_btcpay_sim.py checks that it sends them so.
STORIES: dict[str, tuple[Story, tuple[str, int, bool]]] = {
    "paid and settled": (
        [
            ("InvoiceReceivedPayment", 10, PAID),
            ("InvoiceProcessing", 11, {"overPaid": False}),
            ("InvoicePaymentSettled", 600, PAID),
            ("InvoiceSettled", 601, SETTLED),
        ],
        ("succeeded", 3, False),
    ),
    "processing, replaced, then expired": (
        [
            ("InvoiceReceivedPayment", 10, PAID),
            ("InvoiceProcessing", 11, {"overPaid": False}),
            ("InvoiceExpired", 900, {"partiallyPaid": False}),
        ],
        ("expired", 3, False),
    ),
    "processing then invalid": (
        [
            ("InvoiceProcessing", 11, {"overPaid": False}),
            ("InvoiceInvalid", 86400, {"manuallyMarked": False}),
        ],
        ("failed", 3, False),
    ),
    "expired, then paid after expiration": (
        [
            ("InvoiceExpired", 900, {"partiallyPaid": False}),
            ("InvoiceReceivedPayment", 1000, LATE),
            ("InvoicePaidAfterExpiration", 1000, {}),
        ],
        ("expired", 2, True),
    ),
    "part paid, then expired": (
        [
            ("InvoiceReceivedPayment", 10, PAID),
            ("InvoiceExpired", 900, {"partiallyPaid": True}),
            ("InvoiceExpiredPaidPartial", 900, {}),
        ],
        ("expired", 2, True),
    ),
    "marked settled while new": (
        [("InvoiceSettled", 300, MARKED_SETTLED)],
        ("succeeded", 2, False),
    ),
    "marked settled while processing": (
        [
            ("InvoiceReceivedPayment", 10, PAID),
            ("InvoiceProcessing", 11, {"overPaid": False}),
            ("InvoiceSettled", 300, MARKED_SETTLED),
        ],
        ("succeeded", 3, False),
    ),
    "marked invalid while new": (
        [("InvoiceInvalid", 300, {"manuallyMarked": True})],
        ("failed", 2, False),
    ),
    "marked invalid while processing": (
        [
            ("InvoiceReceivedPayment", 10, PAID),
            ("InvoiceProcessing", 11, {"overPaid": False}),
            ("InvoiceInvalid", 300, {"manuallyMarked": True}),
        ],
        ("failed", 3, False),
    ),
}

# Stories that say both that the invoice was paid and that it ended unpaid (CONTRACT 2: the
# merchant is told, needsAttention, in every order). The first element is where in-order
# delivery ends; the second, where the record ends when the other of the two (the success, or
# the ending) reaches the node first: a success is never taken back, a terminal status never
# left.
CONTRADICTED: dict[str, tuple[Story, tuple[str, int, bool], tuple[str, int]]] = {
    # was "marked settled -> paid late, never a success" before issue 24: BTCPay allows
    # marking settled from Expired (CanMarkComplete), and it is money for an ended checkout
    "expired, then marked settled by hand": (
        [
            ("InvoiceExpired", 900, {"partiallyPaid": False}),
            ("InvoiceSettled", 5000, MARKED_SETTLED),
        ],
        ("expired", 2, True),
        ("succeeded", 2),
    ),
    "invalid, then marked settled by hand": (
        [
            ("InvoiceProcessing", 11, {"overPaid": False}),
            ("InvoiceInvalid", 86400, {"manuallyMarked": False}),
            ("InvoiceSettled", 90000, MARKED_SETTLED),
        ],
        ("failed", 3, True),
        ("succeeded", 3),
    ),
    # was "settled, then marked invalid by hand" with needsAttention false: BTCPay cannot mark
    # an invoice the chain settled (CanMarkInvalid needs New, Processing, Expired, or a marked
    # one); it can mark invalid one that was marked settled, and may then offer a refund
    # (CanRefund: Settled or Invalid, InvoiceEntity.cs:824-832)
    "marked settled, then marked invalid by hand, and a refund offered": (
        [
            ("InvoiceSettled", 601, MARKED_SETTLED),
            ("InvoiceInvalid", 7000, {"manuallyMarked": True}),
            ("InvoiceRefund", 7200, {}),
        ],
        ("succeeded", 2, True),
        ("failed", 2),
    ),
    "marked invalid, then marked settled by hand": (
        [
            ("InvoiceInvalid", 300, {"manuallyMarked": True}),
            ("InvoiceSettled", 7000, MARKED_SETTLED),
        ],
        ("failed", 2, True),
        ("succeeded", 2),
    ),
}


class Deliveries:
    """One story's deliveries for one transaction: the first of each, and a retry (a new
    delivery id) every time one is sent again."""

    def __init__(self, shop: BTCPayShop, tx: str, invoice: str, story: Story) -> None:
        self.shop, self.firsts, self.sent = shop, [], set()
        base = 1_795_254_528
        for n, (event_type, at, fields) in enumerate(story):
            delivery_id = f"D{n}{tx[-12:]}"
            self.firsts.append(
                objects.delivery(
                    event_type,
                    webhook_id=shop.webhook_id,
                    delivery_id=delivery_id,
                    original_delivery_id=delivery_id,
                    is_redelivery=False,
                    timestamp=base + at,
                    store_id=shop.store_id,
                    invoice_id=invoice,
                    metadata={"orderId": tx},
                    **fields,
                )
            )

    def body(self, index: int) -> bytes:
        event = self.firsts[index]
        if index in self.sent:
            event = {**event, "deliveryId": objects.btcpay_id(), "isRedelivery": True}
        self.sent.add(index)
        return objects.body(event)


async def open_checkout(http: httpx.AsyncClient, shop: BTCPayShop) -> tuple[str, str]:
    answer = await http.post(
        f"/api/checkout/btcpay/{shop.project_id}",
        json={"productId": "ten"},
        headers=bearer(shop.test_key),
    )
    assert answer.status_code == 201, answer.text
    tx = answer.json()["txId"]
    return tx, shop.sim.invoice_of(tx)


async def deliver(
    http: httpx.AsyncClient, shop: BTCPayShop, tx: str, story: Deliveries, order: list[int]
) -> list[tuple[int, str]]:
    """Deliver in this order; (version, status) after each."""
    seen = []
    for index in order:
        body = story.body(index)
        answer = await http.post(
            f"/webhook/btcpay/{shop.project_id}",
            content=body,
            headers={"BTCPay-Sig": sign_header(shop.webhook_secret, body)},
        )
        assert answer.status_code == 200, answer.text
        status = (
            await http.get(f"/status/{shop.project_id}/{tx}", headers=bearer(shop.test_key))
        ).json()
        seen.append((status["version"], status["status"]))
    return seen


async def record(http: httpx.AsyncClient, shop: BTCPayShop, tx: str) -> dict[str, Any]:
    answer = await http.get(
        f"/api/projects/{shop.project_id}/transactions/{tx}", headers=bearer(shop.test_key)
    )
    return dict(answer.json())


@pytest.mark.parametrize("name", STORIES)
async def test_every_order_ends_where_in_order_delivery_ends(admin, http, btcpay, name):
    story, (status, version, attention) = STORIES[name]
    await converges(admin, http, btcpay, name, story, (status, version, attention))


# CONTRACT 2 says the final status does not depend on delivery order, and that a success is
# never taken back nor a terminal status left. For a story holding both, no node can keep all
# three: delivered success-first it stays succeeded, delivered ending-first it stays ended. What
# every order gives is the flag, so the merchant looks (docs/api.md, "What a payment must pay").
@pytest.mark.parametrize("name", CONTRADICTED)
async def test_a_contradicted_story_needs_attention_in_every_order(admin, http, btcpay, name):
    story, (status, version, _), (other, other_version) = CONTRADICTED[name]
    shop = await btcpay_shop(admin, btcpay, webhook_url="http://127.0.0.1:9/nobody")
    rng = random.Random(name)
    for order in [[*range(len(story))], *delivery_orders(len(story), rng, samples=10)]:
        tx, invoice = await open_checkout(http, shop)
        seen = await deliver(http, shop, tx, Deliveries(shop, tx, invoice, story), order)
        assert seen[-1] in ((version, status), (other_version, other)), (order, seen)
        assert all(a[0] <= b[0] for a, b in itertools.pairwise(seen)), (order, seen)
        stored = await record(http, shop, tx)
        assert stored["needsAttention"] is True, (order, stored)
        codes = {flag["code"] for flag in stored["attention"]}
        assert codes & {"contradicted", "paid_late"}, (order, stored["attention"])
        from_btcpay = [e for e in stored["events"] if e["provider"] == "btcpay"]
        story_events = [e for e in from_btcpay if (e["providerEventId"] or "").endswith(tx[-12:])]
        assert len(story_events) == len(story), (order, from_btcpay)


async def converges(
    admin: Any,
    http: httpx.AsyncClient,
    btcpay: Any,
    name: str,
    story: Story,
    end: tuple[str, int, bool],
) -> None:
    status, version, attention = end
    shop = await btcpay_shop(admin, btcpay, webhook_url="http://127.0.0.1:9/nobody")
    tx, invoice = await open_checkout(http, shop)
    in_order = await deliver(
        http, shop, tx, Deliveries(shop, tx, invoice, story), [*range(len(story))]
    )
    assert in_order[-1] == (version, status)
    assert (await record(http, shop, tx))["needsAttention"] is attention
    rng = random.Random(name)
    for order in delivery_orders(len(story), rng, samples=10):
        tx, invoice = await open_checkout(http, shop)
        seen = await deliver(http, shop, tx, Deliveries(shop, tx, invoice, story), order)
        assert seen[-1] == in_order[-1], (name, order, seen)
        assert all(a[0] <= b[0] for a, b in itertools.pairwise(seen)), (order, seen)
        stored = await record(http, shop, tx)
        assert stored["needsAttention"] is attention, (order, stored)
        from_btcpay = [e for e in stored["events"] if e["provider"] == "btcpay"]
        story_events = [e for e in from_btcpay if (e["providerEventId"] or "").endswith(tx[-12:])]
        assert len(story_events) == len(story), (order, from_btcpay)  # retries stored once
