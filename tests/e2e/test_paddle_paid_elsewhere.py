"""Paddle payments made outside the node that name one of its checkouts, through the real node
(CONTRACT 4.3: an event moves a transaction only when it names the Paddle transaction the node
created for it; ``custom_data`` is the buyer's to set).

Paddle.js needs only the client-side token that the merchant's page carries, and takes
``customData`` from the page: ``Paddle.Checkout.open({items, customData})`` makes a new
transaction for any of the merchant's catalog prices (PaddleHQ/paddle-js-wrapper@7e60bf55
types/checkout/checkout.d.ts:111-124; developer.paddle.com/paddle-js/methods/
paddle-checkout-open), and ``Paddle.Checkout.updateCheckout({customData})`` replaces the
custom data of the transaction being paid, the node's own included (Paddle changelog
2025-02-27, developer.paddle.com/changelog/2025/update-checkout-custom-data: "If custom data
already exists, it's replaced")."""

from __future__ import annotations

from typing import Any

import httpx
from support.client import bearer, post_checkout
from support.paddle_shop import API_KEY, CLIENT_TOKEN, PaddleShop, paddle_shop


async def checkout(http: httpx.AsyncClient, shop: PaddleShop, product: str) -> dict[str, Any]:
    answer = await post_checkout(http, "paddle", shop, product)
    assert answer.status_code == 201, answer.text
    return dict(answer.json())


async def record(http: httpx.AsyncClient, shop: PaddleShop, tx_id: str) -> dict[str, Any]:
    answer = await http.get(
        f"/api/projects/{shop.project_id}/transactions/{tx_id}", headers=bearer(shop.test_key)
    )
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


async def feed(http: httpx.AsyncClient, shop: PaddleShop) -> list[dict[str, Any]]:
    answer = await http.get(
        f"/api/projects/{shop.project_id}/events", headers=bearer(shop.test_key)
    )
    assert answer.status_code == 200, answer.text
    return list(answer.json()["items"])


def sent_for(shop: PaddleShop, txn_id: str) -> dict[str, str]:
    """What the simulator sent about the Paddle transaction ``txn_id`` (the transaction's own
    events and its adjustments'): event id -> Paddle type."""
    return {
        event["event_id"]: event["event_type"]
        for event, _, _ in shop.sim.delivered
        if txn_id in (event["data"].get("id"), event["data"].get("transaction_id"))
    }


async def test_a_cheap_paddle_js_checkout_naming_a_big_one_neither_pays_nor_refunds_it(
    admin, http, paddle
):
    shop = await paddle_shop(admin, paddle)
    await admin.product(shop.project_id, "big", name="Big", amount=99999999.99, currency="EUR")
    big = await checkout(http, shop, "big")
    assert paddle.transaction(big["token"])["details"]["totals"]["grand_total"] == "9999999999"
    # the merchant sells a 1.00 tip in its catalog; a buyer opens it with the page's token
    tip = paddle.create_price(API_KEY, "Tip", 100, "EUR")
    cheap = await paddle.checkout_open(
        CLIENT_TOKEN, items=[{"priceId": tip, "quantity": 1}], custom_data={"txId": big["txId"]}
    )
    await paddle.pay(cheap)
    tx = await record(http, shop, big["txId"])
    assert (tx["status"], tx["version"], tx["needsAttention"]) == ("pending", 1, False)
    sent = sent_for(shop, cheap)
    paid = [e for e in await feed(http, shop) if e["providerEventId"] in sent]
    assert {sent[e["providerEventId"]] for e in paid} == {
        "transaction.created",
        "transaction.paid",
        "transaction.completed",
    }
    assert {(e["type"], e["txId"], e["claimedTxId"]) for e in paid} == {
        ("unmatched", None, big["txId"])
    }

    # the merchant refunds the tip (Paddle approves it): it is the tip's, not the checkout's
    await paddle.refund(cheap)
    sent = sent_for(shop, cheap)
    refunds = [
        e
        for e in await feed(http, shop)
        if sent.get(e["providerEventId"], "").startswith("adjustment.")
    ]
    assert len(refunds) == 2 and all(e["type"] == "unmatched" for e in refunds)
    assert all(e["txId"] is None for e in refunds)
    assert (await record(http, shop, big["txId"]))["version"] == 1

    # the checkout's own transaction, paid in full, pays it; the tip's refund stays the tip's
    await paddle.pay(big["token"])
    tx = await record(http, shop, big["txId"])
    assert (tx["status"], tx["needsAttention"]) == ("succeeded", False)
    assert not [e for e in tx["events"] if e["providerEventId"] in sent_for(shop, cheap)]


async def test_custom_data_replaced_on_the_nodes_transaction_pays_that_transaction(
    admin, http, paddle
):
    shop = await paddle_shop(admin, paddle)
    first, second = await checkout(http, shop, "ten"), await checkout(http, shop, "ten")
    # a buyer at the first checkout's page points its custom data at the second checkout
    opened = await paddle.checkout_open(CLIENT_TOKEN, transaction_id=first["token"])
    await paddle.update_checkout(CLIENT_TOKEN, opened, {"txId": second["txId"]})
    await paddle.pay(first["token"])
    paid = await record(http, shop, first["txId"])
    assert (paid["status"], paid["needsAttention"]) == ("succeeded", False)
    untouched = await record(http, shop, second["txId"])
    assert (untouched["status"], untouched["version"]) == ("pending", 1)
    # only its own transaction's creation, none of the paid one's events
    from_paddle = [e for e in untouched["events"] if e["providerEventId"]]
    assert [e["type"] for e in from_paddle] in ([], ["checkout.created"]), from_paddle
    assert not [e for e in from_paddle if e["providerEventId"] in sent_for(shop, first["token"])]


async def test_the_buyer_cannot_rewrite_what_the_merchant_is_told_about_its_checkout(
    admin, http, paddle
):
    """The merchant set customerRef and metadata at checkout (CONTRACT 4.2); the buyer, at the
    checkout's page, replaces custom_data with updateCheckout (changelog 2025-02-27) and pays
    the right amount. The payment is the checkout's, but what the merchant reads of it (the
    events' customerRef and metadata, which its fulfilment and notifications go by) must stay
    what the merchant set, as the BTCPay adapter already does for metadata (buyer-editable
    there too)."""
    shop = await paddle_shop(admin, paddle)
    answer = await http.post(
        f"/api/checkout/paddle/{shop.project_id}",
        json={"productId": "ten", "metadata": {"customerRef": "cust-A", "credits": "100"}},
        headers=bearer(shop.test_key),
    )
    made = answer.json()
    await paddle.update_checkout(
        CLIENT_TOKEN,
        made["token"],
        {"txId": made["txId"], "customerRef": "cust-B", "credits": "100000"},
    )
    await paddle.pay(made["token"])
    tx = await record(http, shop, made["txId"])
    assert tx["status"] == "succeeded"
    succeeded = [e for e in tx["events"] if e["type"] == "payment.succeeded"]
    assert succeeded
    assert {e["customerRef"] for e in succeeded} == {"cust-A"}
    assert all(e["metadata"] == {"customerRef": "cust-A", "credits": "100"} for e in succeeded)
