"""A payment made on a Stripe Payment Link that echoes a checkout's transaction id, through a
real node and the Stripe simulator (issue 24: "A 1.00 payment completes a 99,999,999.99
checkout").

What Stripe publishes, and the simulator does:
- anyone who has a link's address can set the session's ``client_reference_id`` in it: "Use the
  client_reference_id URL parameter to streamline reconciliation. Use the URL parameter in the
  payment link's query string" (https://docs.stripe.com/payment-links/url-parameters); a
  Stripe-authored example is ``https://buy.stripe.com/test_8wM8zHe8Qaz2dOg8xA?client_reference_id=
  my-customer-id``, "The Checkout Session will contain the client_reference_id you set"
  (https://dev.to/stripe/payment-link-data-passing-1njp);
- the merchant's own link metadata is "automatically copied to checkout sessions created by this
  payment link" (stripe-python 16.1.0 params/_payment_link_create_params.py:75-78), and its
  line item is a ``price`` or inline ``price_data`` ("One of `price` or `price_data` is
  required", same file, 544-552);
- paying the link's session is paying a Checkout Session: the same events as any session, on the
  same account's webhook endpoints.

The node must match by the session it created, never by the echoed id (CONTRACT 4.3).
"""

from __future__ import annotations

from typing import Any

import httpx
from support.client import bearer, post_checkout
from support.stripe_shop import SECRET_KEY, StripeShop, stripe_shop

from edge.providers.stripe import form as stripe_form
from edge.sim.stripe import StripeSimulator

# the largest amount Stripe charges: "up to eight digits (e.g., a value of 99999999 for a USD
# charge of $999,999.99)" (stripe-python 16.1.0 params/_payment_intent_create_params.py:123)
BIG = 999_999.99


async def _stripe(sim: StripeSimulator, path: str, params: dict[str, Any]) -> dict[str, Any]:
    """The merchant's own call to Stripe, with the shop's secret key."""
    async with httpx.AsyncClient(base_url=sim.url) as http:
        answer = await http.post(
            path,
            content=stripe_form.encode(params),
            headers={
                "Authorization": f"Bearer {SECRET_KEY}",
                "Content-Type": "application/x-www-form-urlencoded",
            },
        )
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


async def _big_checkout(http: httpx.AsyncClient, admin: Any, shop: StripeShop) -> str:
    await admin.product(shop.project_id, "big", name="Everything", amount=BIG, currency="EUR")
    answer = await post_checkout(http, "stripe", shop, "big")
    assert answer.status_code == 201, answer.text
    return str(answer.json()["txId"])


async def _pay_link(sim: StripeSimulator, url: str, reference: str) -> str:
    """A buyer opens the link with ``?client_reference_id=`` and pays; the session's id."""
    async with httpx.AsyncClient() as buyer:
        opened = await buyer.get(url, params={"client_reference_id": reference})
        assert opened.status_code == 303, opened.text
        page = opened.headers["location"]
        assert page.startswith(f"{sim.url}/c/pay/cs_test_")
        paid = await buyer.post(f"{page}/pay")
        assert paid.status_code == 303 and "/thanks" in paid.headers["location"]
    return page.rsplit("/", 1)[-1]


async def _status(http: httpx.AsyncClient, shop: StripeShop, tx_id: str) -> dict[str, Any]:
    return dict((await http.get(f"/status/{shop.project_id}/{tx_id}")).json())


async def _feed(http: httpx.AsyncClient, shop: StripeShop) -> list[dict[str, Any]]:
    answer = await http.get(
        f"/api/projects/{shop.project_id}/events?limit=100", headers=bearer(shop.test_key)
    )
    return list(answer.json()["items"])


async def test_a_cheap_payment_link_payment_echoing_a_checkout_leaves_it_pending(admin, http, sim):
    shop = await stripe_shop(admin, sim)
    big = await _big_checkout(http, admin, shop)
    link = await _stripe(
        sim,
        "/v1/payment_links",
        {
            "line_items": [
                {
                    "price_data": {
                        "currency": "eur",
                        "unit_amount": 100,
                        "product_data": {"name": "A coffee"},
                    },
                    "quantity": 1,
                }
            ],
            "metadata": {"campaign": "spring"},
        },
    )
    assert link["object"] == "payment_link" and link["url"].startswith(f"{sim.url}/b/plink_")

    cheap = await _pay_link(sim, link["url"], big)
    session = sim.session(cheap)
    assert (session["payment_link"], session["client_reference_id"]) == (link["id"], big)
    assert session["metadata"] == {"campaign": "spring"}
    assert (session["amount_total"], session["currency"]) == (100, "eur")
    # the same events as any session's payment, to the shop's endpoint
    delivered = [(e, s) for e, s in sim.delivered if e["data"]["object"].get("id") == cheap]
    assert [(e["type"], s) for e, s in delivered] == [("checkout.session.completed", 200)]
    sent = [e for e, _ in delivered]

    status = await _status(http, shop, big)
    assert (status["status"], status["version"]) == ("pending", 1)
    (stored,) = [e for e in await _feed(http, shop) if e["providerEventId"] == sent[0]["id"]]
    assert (stored["type"], stored["txId"], stored["claimedTxId"]) == ("unmatched", None, big)
    assert (stored["amount"], stored["currency"]) == (1.00, "EUR")

    # the cheap payment refunded: its charge names the cheap session's payment intent only
    await sim.refund(cheap)
    (refund,) = [e for e, _ in sim.delivered if e["type"] == "charge.refunded"]
    (stored,) = [e for e in await _feed(http, shop) if e["providerEventId"] == refund["id"]]
    assert (stored["type"], stored["txId"]) == ("unmatched", None)
    status = await _status(http, shop, big)
    assert (status["status"], status["version"]) == ("pending", 1)
    tx = await http.get(
        f"/api/projects/{shop.project_id}/transactions/{big}", headers=bearer(shop.test_key)
    )
    assert [e["type"] for e in tx.json()["events"]] == ["checkout.created"]
    assert tx.json()["needsAttention"] is False


async def test_a_payment_link_of_a_price_with_metadata_naming_the_checkout_is_unmatched_too(
    admin, http, sim
):
    """The merchant's link metadata (and payment_intent_data metadata, copied to the payment
    intent and its charge) may name a txId too: still not the node's session."""
    shop = await stripe_shop(admin, sim)
    big = await _big_checkout(http, admin, shop)
    price = await _stripe(
        sim,
        "/v1/prices",
        {"currency": "eur", "unit_amount": 100, "product_data": {"name": "A coffee"}},
    )
    link = await _stripe(
        sim,
        "/v1/payment_links",
        {
            "line_items": [{"price": price["id"], "quantity": 1}],
            "metadata": {"txId": big},
            "payment_intent_data": {"metadata": {"txId": big}},
        },
    )
    cheap = await _pay_link(sim, link["url"], big)
    await sim.refund(cheap)
    feed = await _feed(http, shop)
    stored = [e for e in feed if e["type"] != "checkout.created"]
    # the session and the charge (its metadata copied from the payment intent's) name the
    # checkout; refund.created, which Stripe sends with charge.refunded, names nothing
    claims = sorted((e["type"], e.get("claimedTxId") or "") for e in stored)
    assert claims == [("unmatched", ""), ("unmatched", big), ("unmatched", big)]
    status = await _status(http, shop, big)
    assert (status["status"], status["version"]) == ("pending", 1)


async def test_the_nodes_own_checkout_of_the_largest_amount_still_pays(admin, http, sim):
    """The node's own session for the same amount is paid normally (the limit is Stripe's)."""
    shop = await stripe_shop(admin, sim)
    big = await _big_checkout(http, admin, shop)
    tx = await http.get(
        f"/api/projects/{shop.project_id}/transactions/{big}", headers=bearer(shop.test_key)
    )
    session = tx.json()["providerRef"]
    assert sim.session(session)["amount_total"] == 99_999_999
    await sim.complete(session)
    assert (await _status(http, shop, big))["status"] == "succeeded"
