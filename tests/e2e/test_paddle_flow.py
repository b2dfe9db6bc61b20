"""Paddle Billing end to end through the real node and the Paddle simulator: a checkout whose
answer is a token (the ``txn_`` id for Paddle.js), the card form's outcomes, subscriptions with
renewals, failed renewals, refunds and chargebacks reaching the right transaction and ``sub_``
record, the customer portal, and ``edge trigger paddle`` (CONTRACT 4.2 to 4.4; PROVIDERS.md
"Paddle")."""

from __future__ import annotations

import json
import sys
from typing import Any

import httpx
import trio
from support.client import bearer, post_checkout
from support.paddle_shop import CLIENT_TOKEN, PaddleShop, paddle_shop


async def checkout(http: httpx.AsyncClient, shop: PaddleShop, product: str = "ten") -> Any:
    answer = await http.post(
        f"/api/checkout/paddle/{shop.project_id}",
        json={"productId": product, "metadata": {"customerRef": "cust-3"}},
        headers=bearer(shop.test_key),
    )
    assert answer.status_code == 201, answer.text
    return answer.json()


async def record(http: httpx.AsyncClient, shop: PaddleShop, item: str) -> dict[str, Any]:
    """A transaction with its events, or a subscription's status record."""
    path = (
        f"/status/{shop.project_id}"
        if item.startswith("sub_")
        else (f"/api/projects/{shop.project_id}/transactions")
    )
    answer = await http.get(f"{path}/{item}", headers=bearer(shop.test_key))
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


async def test_the_token_is_the_transaction_and_pay_succeeds(admin, http, paddle):
    shop = await paddle_shop(admin, paddle)
    answer = await checkout(http, shop)
    assert (answer["kind"], answer["type"], answer["expiresAt"]) == ("form", "token", None)
    assert answer["publishableKey"] == CLIENT_TOKEN
    txn = paddle.transaction(answer["token"])
    assert txn["id"] == paddle.transaction_of(answer["txId"]) == answer["token"]
    assert txn["custom_data"]["txId"] == answer["txId"]
    assert txn["custom_data"]["customerRef"] == "cust-3"
    assert txn["items"][0]["price"]["unit_price"] == {"amount": "1000", "currency_code": "EUR"}
    await paddle.pay(answer["token"])
    tx = await record(http, shop, answer["txId"])
    assert tx["status"] == "succeeded"
    assert all(e["customerRef"] == "cust-3" for e in tx["events"])
    assert all(status == 200 for _, _, status in paddle.delivered)


async def test_a_declined_card_keeps_the_checkout_open_and_a_cancel_ends_it(admin, http, paddle):
    shop = await paddle_shop(admin, paddle)
    answer = await checkout(http, shop)
    await paddle.decline(answer["token"])
    tx = await record(http, shop, answer["txId"])
    assert tx["status"] == "pending"
    assert "payment.attempt_failed" in [e["type"] for e in tx["events"]]
    await paddle.cancel_transaction(answer["token"])
    assert (await record(http, shop, answer["txId"]))["status"] == "canceled"


async def test_a_subscription_lives_through_renewals_and_the_portal(admin, http, paddle):
    shop = await paddle_shop(admin, paddle)
    answer = await checkout(http, shop, "pro-monthly")
    assert paddle.transaction(answer["token"])["items"][0]["price"]["billing_cycle"] == {
        "interval": "month",
        "frequency": 1,
    }
    await paddle.pay(answer["token"])
    tx = await record(http, shop, answer["txId"])
    assert tx["status"] == "succeeded" and tx["subscriptionId"]
    sub_id = tx["subscriptionId"]
    paddle_sub = paddle.subscription_of(answer["txId"])
    sub = await record(http, shop, sub_id)
    assert sub["status"] == "active"
    first_period_end = sub["currentPeriodEnd"]

    await paddle.fail_renewal(paddle_sub)
    assert (await record(http, shop, sub_id))["status"] == "past_due"
    await paddle.renew(paddle_sub)
    sub = await record(http, shop, sub_id)
    assert sub["status"] == "active" and sub["currentPeriodEnd"] > first_period_end
    # the renewal is the subscription's, not a second payment of the checkout
    assert (await record(http, shop, answer["txId"]))["status"] == "succeeded"
    feed = (
        await http.get(f"/api/projects/{shop.project_id}/events", headers=bearer(shop.test_key))
    ).json()["items"]
    renewals = [e for e in feed if e["type"] == "subscription.payment_succeeded"]
    assert renewals and all(e["subscriptionId"] == sub_id for e in renewals)

    portal = await http.post(
        f"/api/subscriptions/{shop.project_id}/{sub_id}/portal-url",
        json={},
        headers=bearer(shop.test_key),
    )
    assert portal.status_code == 200, portal.text
    assert portal.json()["provider"] == "paddle"
    assert portal.json()["url"].startswith(paddle.url)

    await paddle.cancel_subscription(paddle_sub)
    assert (await record(http, shop, sub_id))["status"] == "canceled"


async def test_edge_trigger_paddle_sends_a_signed_event_through_the_pipeline(
    admin, http, node, paddle
):
    shop = await paddle_shop(admin, paddle)
    answer = await checkout(http, shop)
    data = str(node.ctx.settings.data_dir)
    sent = await trio.run_process(
        [sys.executable, "-m", "edge", "trigger", "paddle", "payment.succeeded"]
        + ["--tx", answer["txId"], "--data", data, "--json"],
        capture_stdout=True,
        capture_stderr=True,
        check=False,
    )
    assert sent.returncode == 0, sent.stderr
    result = json.loads(sent.stdout)
    assert result["status"] == 200 and result["providerEventId"].startswith("evt_")
    tx = await record(http, shop, answer["txId"])
    # the trigger names the node's own txn_ and its real amount: not unmatched, no mismatch
    assert (tx["status"], tx["needsAttention"]) == ("succeeded", False)
    refunded = await trio.run_process(
        [sys.executable, "-m", "edge", "trigger", "paddle", "payment.refunded"]
        + ["--tx", answer["txId"], "--data", data, "--json"],
        capture_stdout=True,
        capture_stderr=True,
        check=False,
    )
    assert refunded.returncode == 0, refunded.stderr
    assert json.loads(refunded.stdout)["providerType"] == "adjustment.updated"
    assert (await record(http, shop, answer["txId"]))["status"] == "refunded"


async def test_a_name_paddle_cannot_take_is_refused_at_save_not_at_checkout(admin, http, paddle):
    """Paddle refuses a non-catalog price whose ``description`` is under 2 characters
    (openapi.yaml ``transaction-price-create-base``: description minLength 2; the simulator
    answers 400 invalid_field, tests/sim/test_paddle_sim.py), and the node sends the product's
    name there: with Paddle enabled, a one-character name is refused when saved (CONTRACT 4.3,
    400 provider_limit), and a product
    saved before Paddle was enabled is refused at checkout
    before anything reaches Paddle."""
    shop = await paddle_shop(admin, paddle)
    answer = await admin.http.put(
        f"/api/manage/projects/{shop.project_id}/products/one",
        json={"name": "X", "kind": "payment", "amount": 5, "currency": "EUR"},
    )
    assert answer.status_code == 400, answer.text
    assert (answer.json()["error"]["code"], answer.json()["error"]["field"]) == (
        "provider_limit",
        "name",
    )
    await admin.product(shop.project_id, "two", name="XY", amount=5, currency="EUR")

    before = await admin.project(name="Earlier")
    await admin.product(before, "one", name="X", amount=5, currency="EUR")  # no Paddle yet
    earlier = await paddle_shop(admin, paddle, project_id=before)
    made = len(paddle.delivered)
    refused = await post_checkout(http, "paddle", earlier, "one")
    assert refused.status_code == 409, refused.text
    assert refused.json()["error"]["code"] == "amount_not_supported"
    assert len(paddle.delivered) == made  # no transaction.created: Paddle was never asked
