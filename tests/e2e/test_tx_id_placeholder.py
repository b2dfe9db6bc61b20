"""``{TX_ID}`` in a success or cancel address (CONTRACT 4.2): the node fills in the transaction
id wherever it sends the buyer, the project's own addresses and a call's alike, so the
merchant's page knows which status to ask about."""

from __future__ import annotations

from support.btcpay_shop import btcpay_shop
from support.client import ORIGIN, bearer, post_checkout
from support.pages import press
from support.stripe_shop import stripe_shop


async def test_stripe_sends_the_buyer_to_the_project_addresses_with_the_tx_id(admin, http, sim):
    shop = await stripe_shop(admin, sim)
    await admin.ok(
        "PATCH",
        f"/api/manage/projects/{shop.project_id}",
        {"successUrl": f"{ORIGIN}/thanks?tx={{TX_ID}}", "cancelUrl": f"{ORIGIN}/cart/{{TX_ID}}"},
    )
    answer = await post_checkout(http, "stripe", shop, "book")
    assert answer.status_code == 201, answer.text
    tx_id = answer.json()["txId"]
    session = sim.session(answer.json()["url"].rsplit("/", 1)[-1])
    assert session["success_url"] == f"{ORIGIN}/thanks?tx={tx_id}"
    assert session["cancel_url"] == f"{ORIGIN}/cart/{tx_id}"
    paid = await http.post(f"{answer.json()['url']}/pay", follow_redirects=False)
    assert paid.headers["location"] == f"{ORIGIN}/thanks?tx={tx_id}"


async def test_a_calls_own_addresses_are_filled_in_too_also_percent_encoded(admin, http, sim):
    shop = await stripe_shop(admin, sim)
    answer = await http.post(
        f"/api/checkout/stripe/{shop.project_id}",
        json={
            "productId": "book",
            "successUrl": f"{ORIGIN}/done/%7BTX_ID%7D",
            "cancelUrl": f"{ORIGIN}/back?tx={{TX_ID}}&again={{TX_ID}}",
        },
        headers=bearer(shop.test_key),
    )
    assert answer.status_code == 201, answer.text
    tx_id = answer.json()["txId"]
    session = sim.session(answer.json()["url"].rsplit("/", 1)[-1])
    assert session["success_url"] == f"{ORIGIN}/done/{tx_id}"
    assert session["cancel_url"] == f"{ORIGIN}/back?tx={tx_id}&again={tx_id}"


async def test_btcpay_sends_the_paid_buyer_to_the_address_with_the_tx_id(admin, http, btcpay):
    shop = await btcpay_shop(admin, btcpay)
    answer = await http.post(
        f"/api/checkout/btcpay/{shop.project_id}",
        json={"productId": "ten", "successUrl": f"{ORIGIN}/paid/{{TX_ID}}"},
        headers=bearer(shop.test_key),
    )
    assert answer.status_code == 201, answer.text
    tx_id, url = answer.json()["txId"], answer.json()["url"]
    await press(http, url, "Pay in full")
    await btcpay.drained()
    assert await press(http, url, "Confirm") == f"{ORIGIN}/paid/{tx_id}"
