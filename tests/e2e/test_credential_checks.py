"""A provider set up wrong is told before any buyer meets it: saving credentials tries them
with the provider (each provider's cheapest authenticated read, against its simulator, which
refuses as the provider does), names the field at fault, and stores nothing; a provider that
cannot be asked leaves them saved and says they are not proven yet.

How each simulator refuses is the provider's published behaviour: Stripe answers 401 "Invalid
API Key provided: sk_test_****" (docs.stripe.com/api/errors); Paddle 403 ``invalid_token``
"Invalid or revoked API key." (developer.paddle.com/errors/shared/invalid_token); PayPal 404
``INVALID_RESOURCE_ID`` for a webhook id its app does not have (Show webhook details,
developer.paypal.com/docs/api/webhooks/v1); BTCPay Server answers ``GET
/api/v1/api-keys/current`` with the key's permissions, which include one another as its
policy definitions say (btcpayserver: GreenfieldApiKeysController.cs,
BTCPayServerServices.cs)."""

from __future__ import annotations

import logging
from typing import Any

from support.btcpay_shop import API_KEY as BTCPAY_KEY
from support.btcpay_shop import btcpay_shop
from support.client import Admin, bearer, manual_shop, post_checkout
from support.paddle_shop import paddle_shop
from support.paypal_shop import paypal_shop
from support.stripe_shop import SECRET_KEY, stripe_shop

PROVIDERS = "/api/manage/projects/{}/providers/{}"


async def _checks(admin: Admin, pid: str, name: str) -> dict[str, Any]:
    project = await admin.ok("GET", f"/api/manage/projects/{pid}")
    found = next(p for p in project["providers"] if p["provider"] == name)
    return dict(found["checks"])


async def _refused(admin: Admin, pid: str, name: str, body: dict[str, Any]) -> dict[str, Any]:
    """The error of a save the provider refused; the project is as it was."""
    before = await admin.ok("GET", f"/api/manage/projects/{pid}")
    answer = await admin.http.put(PROVIDERS.format(pid, name), json=body)
    assert answer.status_code == 400, answer.text
    error: dict[str, Any] = answer.json()["error"]
    assert error["code"] == "credentials_refused"
    assert await admin.ok("GET", f"/api/manage/projects/{pid}") == before
    return error


async def test_stripe_a_refused_key_is_named_and_not_saved(admin, sim, caplog):
    shop = await stripe_shop(admin, sim)
    assert (await _checks(admin, shop.project_id, "stripe"))["test"]["result"] == "ok"
    rolled = "sk_test_rolled0123456789abcdefghij"
    sim.refused_keys.add(rolled)
    with caplog.at_level(logging.WARNING, logger="edge.setup"):
        error = await _refused(
            admin, shop.project_id, "stripe", {"enabled": True, "test": {"secretKey": rolled}}
        )
    assert error["field"] == "test.secretKey"
    assert "Invalid API Key provided" in error["message"]
    assert rolled not in error["message"] and rolled not in caplog.text
    assert "Stripe refused the test credentials" in caplog.text


async def test_stripe_not_answering_saves_and_says_so(admin, sim):
    shop = await stripe_shop(admin, sim)
    sim.fail_next_requests = 1
    view = await admin.provider(
        shop.project_id, "stripe", {"enabled": True, "test": {"publishableKey": "pk_test_new1"}}
    )
    check = view["checks"]["test"]
    assert check["result"] == "unchecked" and "not tried yet" in check["message"]
    assert view["test"]["publishableKey"] == "pk_test_new1"
    # tried again on the next save, now that Stripe answers
    view = await admin.provider(shop.project_id, "stripe", {"enabled": True, "test": {}})
    assert view["checks"]["test"]["result"] == "ok"


async def test_turning_a_provider_on_tries_what_is_stored(admin, sim):
    shop = await stripe_shop(admin, sim)
    pid = shop.project_id
    await admin.provider(pid, "stripe", {"enabled": False})
    sim.refused_keys.add("sk_test_shop0123456789abcdefghij")
    error = await _refused(admin, pid, "stripe", {"enabled": True})
    assert error["field"] == "test.secretKey"


async def test_paypal_a_wrong_secret_and_a_webhook_of_another_app(admin, paypal):
    shop = await paypal_shop(admin, paypal)
    pid = shop.project_id
    error = await _refused(
        admin, pid, "paypal", {"enabled": True, "test": {"clientSecret": "not-the-secret"}}
    )
    assert error["field"] == "test.clientSecret"
    assert "sandbox app" in error["message"]
    other = paypal.register_webhook("another-app", "another-secret", "https://example.com/hook")
    error = await _refused(admin, pid, "paypal", {"enabled": True, "test": {"webhookId": other}})
    assert error["field"] == "test.webhookId"
    assert "no webhook with this id" in error["message"]


async def test_paddle_a_revoked_key(admin, paddle):
    shop = await paddle_shop(admin, paddle)
    revoked = "pdl_sdbx_apikey_revoked0123456789"
    paddle.refused_keys.add(revoked)
    error = await _refused(
        admin, shop.project_id, "paddle", {"enabled": True, "test": {"apiKey": revoked}}
    )
    assert error["field"] == "test.apiKey"
    assert "Paddle does not know this API key" in error["message"]


async def test_btcpay_a_key_without_permissions_and_a_wrong_store(admin, btcpay):
    shop = await btcpay_shop(admin, btcpay)
    pid = shop.project_id
    # a key that may only create invoices: reading them (asking) and refunds are missing
    narrow = "sim-btcpay-key-narrow"
    store = btcpay.register_store(narrow, permissions=["btcpay.store.cancreateinvoice"])
    error = await _refused(
        admin, pid, "btcpay", {"enabled": True, "test": {"apiKey": narrow, "storeId": store}}
    )
    assert error["field"] == "test.apiKey"
    assert "btcpay.store.canviewinvoices" in error["message"]
    assert "btcpay.store.cancreatenonapprovedpullpayments" in error["message"]
    assert "btcpay.store.cancreateinvoice " not in error["message"]
    # the shop's key, but another store's id
    other = btcpay.register_store("sim-btcpay-key-other")
    error = await _refused(admin, pid, "btcpay", {"enabled": True, "test": {"storeId": other}})
    assert error["field"] == "test.storeId"
    assert shop.store_id in error["message"]
    # a key BTCPay does not know
    error = await _refused(admin, pid, "btcpay", {"enabled": True, "test": {"apiKey": "nope"}})
    assert error["field"] == "test.apiKey"
    view = await admin.provider(pid, "btcpay", {"enabled": True, "test": {"apiKey": BTCPAY_KEY}})
    assert view["checks"]["test"]["result"] == "ok"


async def test_pay_by_mail_has_nothing_to_try(admin):
    shop = await manual_shop(admin)
    assert await _checks(admin, shop.project_id, "manual") == {}


async def test_a_checkout_the_provider_refuses_is_a_set_up_problem_until_one_goes_through(
    admin, http, sim, caplog
):
    shop = await stripe_shop(admin, sim)
    sim.refused_keys.add(SECRET_KEY)  # rolled in Stripe's dashboard after it was saved
    with caplog.at_level(logging.WARNING, logger="edge.actors"):
        for _ in range(2):
            answer = await post_checkout(http, "stripe", shop, "pro-monthly")
            assert answer.status_code == 502
            error = answer.json()["error"]
            assert error["retryable"] is False and "try again" not in error["message"]
            assert "must fix its set-up" in error["message"]
    # logged once, without the key
    lines = [r.getMessage() for r in caplog.records if "refused a test checkout" in r.getMessage()]
    assert len(lines) == 1 and SECRET_KEY not in lines[0]
    check = (await _checks(admin, shop.project_id, "stripe"))["test"]
    assert (check["result"], check["during"], check["field"]) == (
        "refused",
        "checkout",
        "test.secretKey",
    )
    assert "Invalid API Key provided" in check["message"]
    # the transaction says why it was canceled, for the merchant
    listed = await http.get(
        f"/api/projects/{shop.project_id}/transactions", headers=bearer(shop.test_key)
    )
    tx_id = listed.json()["items"][0]["id"]
    tx = (
        await http.get(
            f"/api/projects/{shop.project_id}/transactions/{tx_id}", headers=bearer(shop.test_key)
        )
    ).json()
    assert tx["status"] == "canceled" and "Invalid API Key provided" in tx["reason"]
    sim.refused_keys.clear()
    assert (await post_checkout(http, "stripe", shop, "pro-monthly")).status_code == 201
    check = (await _checks(admin, shop.project_id, "stripe"))["test"]
    assert (check["result"], check["during"]) == ("ok", "checkout")
