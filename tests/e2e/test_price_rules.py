"""Each provider's own money and length rules, through a real node (CONTRACT 4.3): checked when a
product or an override is saved (400 provider_limit naming the field and the rule), never
discovered at the provider; a product saved before a provider was enabled is not offered with it
and its checkout is refused before anything is stored.

The rules, from the providers' own material:
- Stripe, three-decimal currencies: "these API calls require the least-significant (last) digit
  to be 0" (docs.stripe.com/currencies, three-decimal currencies);
- Stripe, size: "The amount value supports up to eight digits (e.g., a value of 99999999 for a
  USD charge of $999,999.99)" (stripe-python 16.1.0, params/_payment_intent_create_params.py);
- Paddle: a non-catalog price's ``description`` is 2 to 500 characters (Paddle's openapi.yaml,
  transaction-price-create-base), and the node sends the product's name there."""

from __future__ import annotations

from typing import Any

import httpx
from support.client import bearer, manual_shop
from support.stripe_events import stripe_credentials

PADDLE_TEST = {
    "apiKey": "pdl_sdbx_apikey_rules0123456789abcdefghij",
    "clientToken": "test_rules0123456789abcdefghij",
    "webhookSecret": "pdl_ntfset_rules_0123456789",
    "apiBase": "http://127.0.0.1:9",
}


async def _put(admin: Any, pid: str, product_id: str, **fields: Any) -> httpx.Response:
    body = {"name": "A book", "kind": "payment", "amount": 19.99, "currency": "EUR", **fields}
    response: httpx.Response = await admin.http.put(
        f"/api/manage/projects/{pid}/products/{product_id}", json=body
    )
    return response


def _refused(answer: httpx.Response, field: str, says: str) -> None:
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert (error["code"], error["field"]) == ("provider_limit", field), error
    assert says in error["message"], error


async def test_stripes_rules_are_checked_when_a_product_is_saved(admin):
    shop = await manual_shop(admin)
    pid = shop.project_id
    await admin.provider(pid, "stripe", {"enabled": True, "test": stripe_credentials()})
    _refused(
        await _put(admin, pid, "kwd", amount=12.345, currency="KWD"), "amount", "last of three"
    )
    assert (await _put(admin, pid, "kwd", amount=12.34, currency="KWD")).status_code == 200
    _refused(await _put(admin, pid, "big", amount=1_000_000, currency="EUR"), "amount", "eight")
    assert (await _put(admin, pid, "big", amount=999_999.99, currency="EUR")).status_code == 200
    overridden = await _put(admin, pid, "odd", overrides={"stripe": {"amount": 1_000_000}})
    _refused(overridden, "overrides.stripe.amount", "eight")
    # nothing refused was stored
    products = (await admin.ok("GET", f"/api/manage/projects/{pid}"))["products"]
    stored = {p["id"]: p["amount"] for p in products}
    assert stored["kwd"] == 12.34 and stored["big"] == 999_999.99 and "odd" not in stored


async def test_paddles_name_rule_is_checked_when_a_product_is_saved(admin):
    shop = await manual_shop(admin)
    pid = shop.project_id
    await admin.provider(pid, "paddle", {"enabled": True, "test": PADDLE_TEST})
    _refused(await _put(admin, pid, "x", name="X"), "name", "2 characters")
    assert (await _put(admin, pid, "x", name="XL")).status_code == 200
    # an override for a provider that is not enabled is checked too: it is meant for it
    _refused(
        await _put(admin, pid, "big", amount=1_000_000, overrides={"stripe": {}}),
        "amount",
        "Stripe charges at most",
    )


async def test_a_product_saved_before_its_provider_was_enabled_is_refused_before_storing(
    admin, http
):
    shop = await manual_shop(admin)
    pid = shop.project_id
    assert (await _put(admin, pid, "kwd", amount=12.345, currency="KWD")).status_code == 200
    await admin.provider(pid, "stripe", {"enabled": True, "test": stripe_credentials()})
    info = await http.get(
        f"/api/projects/{pid}/public-info", params={"productId": "kwd", "mode": "test"}
    )
    offered = [p["provider"] for p in info.json()["providers"]]
    assert "stripe" not in offered and "manual" in offered
    refused = await http.post(
        f"/api/checkout/stripe/{pid}", json={"productId": "kwd", "mode": "test"}
    )
    assert refused.status_code == 409, refused.text
    assert refused.json()["error"]["code"] == "amount_not_supported"
    listed = await http.get(f"/api/projects/{pid}/transactions", headers=bearer(shop.test_key))
    assert listed.json()["items"] == []  # nothing stays pending: nothing was stored


async def test_a_quantity_past_the_limit_is_refused_before_storing(admin, http):
    shop = await manual_shop(admin)
    pid = shop.project_id
    await admin.provider(pid, "stripe", {"enabled": True, "test": stripe_credentials()})
    assert (await _put(admin, pid, "big", amount=500_000)).status_code == 200
    refused = await http.post(
        f"/api/checkout/stripe/{pid}", json={"productId": "big", "mode": "test", "quantity": 2}
    )
    assert refused.status_code == 409, refused.text
    error = refused.json()["error"]
    assert (error["code"], error["field"]) == ("amount_not_supported", "quantity")
    listed = await http.get(f"/api/projects/{pid}/transactions", headers=bearer(shop.test_key))
    assert listed.json()["items"] == []
