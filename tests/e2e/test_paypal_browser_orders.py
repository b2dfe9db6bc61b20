"""PayPal orders the node did not create, and PayPal's request ids, through a real node and the
PayPal simulator (issue 24: "A 1.00 payment completes a 99,999,999.99 checkout"; "the capture
reuses the create-order PayPal-Request-Id").

What PayPal publishes, and the simulator does:
- the JS SDK runs in the buyer's browser with the merchant's public client id alone (paypal-js
  ``clientId``, packages/paypal-js/types/script-options.d.ts:3); its
  ``actions.order.create(options)`` "Accepts the same options as the request body of the
  /v2/checkout/orders api" (types/components/buttons.d.ts:18-22), ``custom_id`` and
  ``invoice_id`` included (types/apis/openapi/checkout_orders_v2.d.ts:1328-1330), and
  ``actions.order.capture()`` "Captures payment for an order" once the buyer approved it
  (buttons.d.ts:59-66); all at paypal/paypal-js@f791da2f598588476b196559eb74a5870458ecdd. The
  order is the merchant's, so its webhooks (CHECKOUT.ORDER.APPROVED, PAYMENT.CAPTURE.COMPLETED)
  go to the merchant like any order's;
- "when you include a previously specified PayPal-Request-Id header in a request, PayPal returns
  the latest status of the previous request that used that same header"
  (https://developer.paypal.com/api/rest/reference/idempotency/); "Set a unique
  PayPal-Request-Id header for each API call" (https://developer.paypal.com/limited-release/
  alternative-payment-methods/klarna/reference/implement-idempotency).

The node matches by the order it created, never by ``custom_id``/``invoice_id`` (CONTRACT 4.3),
and owes a capture only for its own order, with ``PayPal-Request-Id: {txId}-capture``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
import trio
from support.client import bearer, post_checkout
from support.pages import press
from support.paypal_shop import CLIENT_ID, CLIENT_SECRET, PayPalShop, paypal_shop
from support.waits import bound

from edge.sim.paypal import PayPalSimulator

BIG = 99_999_999.99


@pytest.fixture
async def buyer() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=bound(30.0)) as client:
        yield client


async def checkout(http: httpx.AsyncClient, shop: PayPalShop, product: str) -> tuple[str, str]:
    """A checkout of ``product``: its transaction id and its approval address."""
    answer = await post_checkout(http, "paypal", shop, product)
    assert answer.status_code == 201, answer.text
    return answer.json()["txId"], answer.json()["url"]


def order_of(url: str) -> str:
    return parse_qs(urlsplit(url).query)["token"][0]


async def status(http: httpx.AsyncClient, shop: PayPalShop, item: str) -> dict[str, Any]:
    return dict((await http.get(f"/status/{shop.project_id}/{item}")).json())


async def until(http: httpx.AsyncClient, shop: PayPalShop, item: str, wanted: str) -> None:
    with trio.fail_after(bound(15)):
        seen = await status(http, shop, item)
        while seen["status"] != wanted:
            answer = await http.get(
                f"/status/{shop.project_id}/{item}",
                params={"wait": 10, "version": seen["version"]},
            )
            seen = answer.json()


async def feed(http: httpx.AsyncClient, shop: PayPalShop) -> list[dict[str, Any]]:
    answer = await http.get(
        f"/api/projects/{shop.project_id}/events?limit=100", headers=bearer(shop.test_key)
    )
    return list(answer.json()["items"])


async def event_of(http: httpx.AsyncClient, shop: PayPalShop, tx: str, kind: str) -> None:
    """Once the feed has an event ``kind`` of ``tx``, by the feed's long poll (an event is
    stored with what it did to its transaction, in one commit)."""
    after = None
    with trio.fail_after(bound(15)):
        while True:
            params = {"wait": 10, "limit": 100, **({"after": after} if after else {})}
            page = (
                await http.get(
                    f"/api/projects/{shop.project_id}/events",
                    params=params,
                    headers=bearer(shop.test_key),
                )
            ).json()
            if any((e["type"], e.get("txId")) == (kind, tx) for e in page["items"]):
                return
            after = page["next"] or after


class BuyersPage:
    """The shop's page in the buyer's browser, with the JS SDK loaded by the shop's client id."""

    def __init__(self, sim: PayPalSimulator, http: httpx.AsyncClient) -> None:
        self.sim, self.http, self.token = sim, http, ""

    async def load_sdk(self, client_id: str) -> None:
        answer = await self.http.post(f"{self.sim.url}/sdk/token", params={"client-id": client_id})
        assert answer.status_code == 200, answer.text
        self.token = answer.json()["facilitatorAccessToken"]

    async def call(self, method: str, path: str, body: Any = None) -> httpx.Response:
        return await self.http.request(
            method,
            f"{self.sim.url}{path}",
            json=body,
            headers={"Authorization": f"Bearer {self.token}"},
        )

    async def create_order(self, body: dict[str, Any]) -> dict[str, Any]:
        """``actions.order.create(body)``."""
        answer = await self.call("POST", "/v2/checkout/orders", body)
        assert answer.status_code == 201, answer.text
        return dict(answer.json())

    async def approve(self, order: dict[str, Any]) -> None:
        """The buyer approves in PayPal's window; the window closes (no return address)."""
        approve = next(link["href"] for link in order["links"] if link["rel"] == "approve")
        page = await self.http.get(approve)
        assert page.status_code == 200 and "Approve" in page.text
        done = await self.http.post(
            approve.split("?")[0], data={"token": order["id"], "action": "approve"}
        )
        assert done.status_code == 200, done.text

    async def capture(self, order_id: str) -> dict[str, Any]:
        """``actions.order.capture()`` in ``onApprove``."""
        answer = await self.call("POST", f"/v2/checkout/orders/{order_id}/capture")
        assert answer.status_code == 201, answer.text
        return dict(answer.json())


def cheap_order(tx_id: str) -> dict[str, Any]:
    return {
        "intent": "CAPTURE",
        "purchase_units": [
            {
                "custom_id": tx_id,
                "invoice_id": tx_id,
                "description": "A sticker",
                "amount": {"currency_code": "EUR", "value": "1.00"},
            }
        ],
    }


async def test_a_browser_order_echoing_a_checkout_leaves_it_pending_and_uncaptured_by_the_node(
    admin, http, paypal, buyer
):
    shop = await paypal_shop(admin, paypal)
    await admin.product(shop.project_id, "big", name="Everything", amount=BIG, currency="EUR")
    big, _ = await checkout(http, shop, "big")

    page = BuyersPage(paypal, buyer)
    await page.load_sdk(CLIENT_ID)  # public: any visitor of the shop's page has it
    order = await page.create_order(cheap_order(big))
    assert order["status"] == "CREATED"
    await page.approve(order)
    captured = await page.capture(order["id"])
    capture = captured["purchase_units"][0]["payments"]["captures"][0]
    assert (captured["status"], capture["custom_id"], capture["invoice_id"]) == (
        "COMPLETED",
        big,
        big,
    )
    sent = [(e["event_type"], s) for e, _, s in paypal.delivered if _about(e, order["id"])]
    assert sent == [("CHECKOUT.ORDER.APPROVED", 200), ("PAYMENT.CAPTURE.COMPLETED", 200)]

    # the shop's next buyer pays with the node's own checkout: the node captures that one,
    # having worked through the approval of the browser's order before it
    small, url = await checkout(http, shop, "book")
    await press(buyer, url, "Approve")
    await until(http, shop, small, "succeeded")

    seen = await status(http, shop, big)
    assert (seen["status"], seen["version"]) == ("pending", 1)
    stored = [e for e in await feed(http, shop) if e.get("claimedTxId") == big]
    assert [(e["type"], e["txId"], e["amount"]) for e in stored] == [("unmatched", None, 1.0)] * 2
    # the only capture of that order is the buyer's page's
    assert [c for c in paypal.capture_calls if c[0] == order["id"]] == [
        (order["id"], None, "browser")
    ]
    assert paypal.capture_count(order["id"]) == 1


async def test_the_facilitator_token_only_makes_and_captures_orders(admin, paypal, buyer):
    """The client id is public: what the browser's token may do is what the JS SDK's actions do
    (create, get, capture), not the merchant's API (refunds, webhooks)."""
    await paypal_shop(admin, paypal)  # the app of CLIENT_ID exists
    page = BuyersPage(paypal, buyer)
    await page.load_sdk(CLIENT_ID)
    order = await page.create_order(cheap_order("tx_01JD0000000000000000000001"))
    got = await page.call("GET", f"/v2/checkout/orders/{order['id']}")
    assert got.status_code == 200 and got.json()["id"] == order["id"]
    for method, path in [
        ("GET", "/v1/notifications/webhooks"),
        ("POST", "/v2/payments/captures/X/refund"),
        ("POST", "/v1/billing/plans"),
    ]:
        refused = await page.call(method, path, {})
        assert (refused.status_code, refused.json()["name"]) == (403, "NOT_AUTHORIZED"), path
    unknown = await buyer.post(f"{paypal.url}/sdk/token", params={"client-id": "nobody"})
    assert unknown.status_code == 401


async def test_the_nodes_capture_has_a_request_id_of_its_own(admin, http, paypal, buyer):
    """The order is created with ``PayPal-Request-Id: {txId}``; the capture with
    ``{txId}-capture``, so PayPal does not answer it with the stored create. The same capture
    key twice (the approval webhook and the buyer's return both owe the capture) is one
    capture. A capture sent with the create's id gets the order as created back, and captures
    nothing."""
    shop = await paypal_shop(admin, paypal)
    tx_id, url = await checkout(http, shop, "book")
    order_id = order_of(url)
    back = await press(buyer, url, "Approve")
    await until(http, shop, tx_id, "succeeded")
    returned = await buyer.get(back, follow_redirects=False)
    # the return owes the capture too, and answers the page that sends the buyer on
    assert returned.status_code == 200, returned.text
    calls = [c for c in paypal.capture_calls if c[0] == order_id]
    assert calls and all(c == (order_id, f"{tx_id}-capture", "merchant") for c in calls), calls
    assert paypal.capture_count(order_id) == 1

    async with httpx.AsyncClient() as server:
        token = (
            await server.post(
                f"{paypal.url}/v1/oauth2/token",
                auth=(CLIENT_ID, CLIENT_SECRET),
                data={"grant_type": "client_credentials"},
            )
        ).json()["access_token"]
        with_create_id = await server.post(
            f"{paypal.url}/v2/checkout/orders/{order_id}/capture",
            json={},
            headers={"Authorization": f"Bearer {token}", "PayPal-Request-Id": tx_id},
        )
    assert with_create_id.status_code == 200
    assert with_create_id.json()["status"] == "PAYER_ACTION_REQUIRED"  # the order as created
    assert "payments" not in with_create_id.json()["purchase_units"][0]
    assert paypal.capture_count(order_id) == 1


def _about(event: dict[str, Any], order_id: str) -> bool:
    resource = event["resource"]
    related = resource.get("supplementary_data", {}).get("related_ids", {})
    return order_id in (resource.get("id"), related.get("order_id"))


async def test_an_invoice_id_taken_first_in_the_browser_is_told_to_the_merchant(
    admin, http, paypal, buyer
):
    """The node's order carries ``invoice_id`` = its transaction id (CONTRACT 4.2), which a
    buyer's page can put on an order of its own and capture first; PayPal then refuses the
    node's capture for good (DUPLICATE_INVOICE_ID: "your account setting requires that Invoice
    Id be unique for each transaction", checkout_orders_v2.json). Nothing is charged for the
    checkout, and the merchant is told so (attention ``capture_refused``) instead of a
    checkout pending in silence until it expires."""
    shop = await paypal_shop(admin, paypal)
    tx, url = await checkout(http, shop, "book")
    page = BuyersPage(paypal, buyer)
    await page.load_sdk(CLIENT_ID)
    order = await page.create_order(cheap_order(tx))
    await page.approve(order)
    await page.capture(order["id"])  # the browser's order takes the invoice id first
    await press(buyer, url, "Approve")  # the node's own order, approved: the node captures
    await event_of(http, shop, tx, "payment.attempt_failed")  # the refusal, flag and all
    record = (
        await http.get(
            f"/api/projects/{shop.project_id}/transactions/{tx}", headers=bearer(shop.test_key)
        )
    ).json()
    assert record["needsAttention"] is True
    assert record["status"] == "pending"
    assert [flag["code"] for flag in record["attention"]] == ["capture_refused"]
    assert paypal.capture_count(order_of(url)) == 0
