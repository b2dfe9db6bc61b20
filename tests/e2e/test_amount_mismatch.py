"""Money that is not what the checkout asked for, through a real node (CONTRACT 4.3): an event on
the checkout's own provider object that reports another amount or currency does not complete it;
it is stored as ``payment.amount_mismatch`` with both amounts, flagged, counted in /metrics,
said in words on the dashboard's transaction page, and sent to the notification endpoints.
An event that only echoes the transaction id on another object is stored unmatched with the id
it claimed, and moves nothing.

Stripe's shapes (tests/fixtures/stripe) on the session the node created, so the test does not
depend on a simulator's behaviour, only on Stripe's wire format."""

from __future__ import annotations

import json

import trio
from support.asgi import serve_asgi
from support.client import Admin, bearer
from support.merchant import Merchant, add_endpoint
from support.stripe_events import event_body, signed, stripe_object
from support.stripe_shop import stripe_shop


async def _checkout(http, shop, product="book"):
    answer = await http.post(
        f"/api/checkout/stripe/{shop.project_id}",
        json={"productId": product, "mode": "test"},
        headers=bearer(shop.test_key),
    )
    assert answer.status_code == 201, answer.text
    tx = (
        await http.get(
            f"/api/projects/{shop.project_id}/transactions/{answer.json()['txId']}",
            headers=bearer(shop.test_key),
        )
    ).json()
    return tx


def _completed(session_id: str, tx_id: str, amount: int, currency: str, n: int = 1) -> bytes:
    session = stripe_object(
        "checkout_session",
        id=session_id,
        client_reference_id=tx_id,
        payment_intent=f"pi_mismatch_{n}",
        payment_status="paid",
        status="complete",
        amount_total=amount,
        amount_subtotal=amount,
        currency=currency,
        metadata={"txId": tx_id},
    )
    return event_body(f"evt_mismatch_{tx_id[-8:]}_{n}", "checkout.session.completed", session)


async def _deliver(http, shop, body: bytes) -> dict:
    answer = await http.post(
        f"/webhook/stripe/{shop.project_id}",
        content=body,
        headers=signed(body, shop.webhook_secret),
    )
    assert answer.status_code == 200, answer.text
    return answer.json()


async def test_a_payment_of_another_amount_flags_the_checkout_and_says_so_everywhere(
    node, http, sim
):
    # the merchant's own account, so the dashboard shows the project
    admin = await Admin.account(node.url, "merchant@example.com")
    shop = await stripe_shop(admin, sim)
    merchant = Merchant()
    async with trio.open_nursery() as nursery:
        base = await nursery.start(serve_asgi, merchant)
        await add_endpoint(
            admin,
            shop.project_id,
            url=base.replace("127.0.0.1", "localhost") + "/hooks",
            mode="test",
            types=["payment.amount_mismatch"],
        )
        tx = await _checkout(http, shop)  # 19.99 EUR
        # Stripe's own session, paid: but 1.00 EUR
        await _deliver(http, shop, _completed(tx["providerRef"], tx["id"], 100, "eur"))
        await merchant.wait_for(1)
        nursery.cancel_scope.cancel()

    status = (await http.get(f"/status/{shop.project_id}/{tx['id']}")).json()
    assert (status["status"], status["version"]) == ("pending", 1)
    record = (
        await http.get(
            f"/api/projects/{shop.project_id}/transactions/{tx['id']}",
            headers=bearer(shop.test_key),
        )
    ).json()
    assert record["needsAttention"] is True
    flag = record["attention"][0]
    assert (flag["code"], flag["amount"], flag["currency"]) == ("amount_mismatch", 1.0, "EUR")
    assert (flag["expectedAmount"], flag["expectedCurrency"]) == (19.99, "EUR")
    mismatch = [e for e in record["events"] if e["type"] == "payment.amount_mismatch"]
    assert len(mismatch) == 1 and mismatch[0]["appliedAt"] is None
    assert (mismatch[0]["amount"], mismatch[0]["expectedAmount"]) == (1.0, 19.99)

    sent = json.loads(merchant.got[0][1])
    assert sent["type"] == "payment.amount_mismatch" and sent["txId"] == tx["id"]
    assert (sent["amount"], sent["expectedAmount"]) == (1.0, 19.99)

    metrics = await http.get("/metrics", headers=bearer(node.ctx.settings.admin_token))
    assert 'edge_webhooks_total{outcome="amount_mismatch",provider="stripe"} 1.0' in metrics.text

    page = await admin.http.get(f"/dashboard/p/{shop.project_id}/transactions/{tx['id']}")
    assert page.status_code == 200, page.text
    assert "Stripe reported 1.00 EUR paid for this checkout of 19.99 EUR." in page.text
    assert "It did not complete the checkout" in page.text
    await admin.aclose()


async def test_another_currency_is_a_mismatch_and_the_right_payment_still_completes(
    admin, http, sim
):
    shop = await stripe_shop(admin, sim)
    tx = await _checkout(http, shop)
    wrong = await _deliver(http, shop, _completed(tx["providerRef"], tx["id"], 1999, "usd", 1))
    status = (await http.get(f"/status/{shop.project_id}/{tx['id']}")).json()
    assert status["status"] == "pending" and wrong["duplicate"] is False
    # Stripe would not send both for one session; the node still takes the right one when it
    # comes, and the merchant keeps the flag for the wrong one
    await _deliver(http, shop, _completed(tx["providerRef"], tx["id"], 1999, "eur", 2))
    record = (
        await http.get(
            f"/api/projects/{shop.project_id}/transactions/{tx['id']}",
            headers=bearer(shop.test_key),
        )
    ).json()
    assert (record["status"], record["needsAttention"]) == ("succeeded", True)
    assert [f["code"] for f in record["attention"]] == ["amount_mismatch"]
    assert record["attention"][0]["currency"] == "USD"


async def test_an_echoed_id_on_another_session_is_unmatched_and_claims_it(admin, http, sim):
    shop = await stripe_shop(admin, sim)
    tx = await _checkout(http, shop)
    # a Payment Link's session: anyone can add ?client_reference_id= to its address
    # (docs.stripe.com/payment-links/url-parameters), at the right amount even
    answer = await _deliver(http, shop, _completed("cs_test_elsewhere", tx["id"], 1999, "eur"))
    status = (await http.get(f"/status/{shop.project_id}/{tx['id']}")).json()
    assert (status["status"], status["version"]) == ("pending", 1)
    feed = (
        await http.get(f"/api/projects/{shop.project_id}/events", headers=bearer(shop.test_key))
    ).json()["items"]
    stored = next(e for e in feed if e["id"] == answer["eventId"])
    assert (stored["type"], stored["txId"], stored["claimedTxId"]) == ("unmatched", None, tx["id"])
