"""PayPal's money rules, checked by the node when a product is saved (400 ``provider_limit``),
so the refusal PayPal would give when the order is created
(tests/sim/test_paypal_sim_request_ids_and_money.py) is never reached.

HUF and TWD have two decimals in ISO 4217 but none at PayPal: "This currency does not support
decimals. If you pass a decimal amount, an error occurs."
(https://developer.paypal.com/docs/api/reference/currency-codes/); PayPal takes only the
currencies that page lists (BHD is not one).
"""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
import trio
from support.client import post_checkout
from support.pages import press
from support.paypal_shop import paypal_shop
from support.waits import bound


@pytest.mark.parametrize(
    ("amount", "currency", "field"),
    [(1000.5, "HUF", "amount"), (12.25, "TWD", "amount"), (10, "BHD", "currency")],
)
async def test_a_price_paypal_refuses_is_refused_when_the_product_is_saved(
    admin, paypal, amount, currency, field
):
    shop = await paypal_shop(admin, paypal)
    body = {"name": "Tea", "kind": "payment", "amount": amount, "currency": currency}
    answer = await admin.http.put(f"/api/manage/projects/{shop.project_id}/products/tea", json=body)
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert (error["code"], error["field"]) == ("provider_limit", field)
    assert "PayPal" in error["message"]


async def test_a_whole_forint_price_is_an_order_paypal_takes(admin, http, paypal):
    shop = await paypal_shop(admin, paypal)
    await admin.product(shop.project_id, "tea", name="Tea", amount=1000, currency="HUF")
    answer = await post_checkout(http, "paypal", shop, "tea")
    assert answer.status_code == 201, answer.text
    tx_id = answer.json()["txId"]
    order_id = parse_qs(urlsplit(answer.json()["url"]).query)["token"][0]
    order = paypal.order(order_id)
    assert order["purchase_units"][0]["amount"] == {"currency_code": "HUF", "value": "1000"}
    async with httpx.AsyncClient() as buyer:
        await press(buyer, answer.json()["url"], "Approve")
    with trio.fail_after(bound(15)):
        seen = (await http.get(f"/status/{shop.project_id}/{tx_id}")).json()
        while seen["status"] != "succeeded":
            seen = (
                await http.get(
                    f"/status/{shop.project_id}/{tx_id}",
                    params={"wait": 10, "version": seen["version"]},
                )
            ).json()
    assert (seen["amount"], seen["currency"]) == (1000, "HUF")
