"""A method is offered only where it can work (CONTRACT 4.1): in a mode whose credentials are
complete, webhook secret included, and for a product it can take (no crypto or pay by mail
for a subscription). public-info leaves the others out, their checkouts are refused before
anything is stored, and the dashboard's payment methods page says why in words."""

from __future__ import annotations

import sys

import trio
from support.btcpay_shop import btcpay_shop
from support.client import Admin, bearer, post_checkout
from support.stripe_shop import SECRET_KEY, stripe_shop


async def _offered(http, pid: str, product: str, mode: str = "test") -> list[str]:
    info = await http.get(
        f"/api/projects/{pid}/public-info", params={"productId": product, "mode": mode}
    )
    assert info.status_code == 200, info.text
    return [p["provider"] for p in info.json()["providers"]]


async def test_no_crypto_or_pay_by_mail_for_a_subscription(admin, http, sim, btcpay):
    shop = await stripe_shop(admin, sim)  # pay by mail, Stripe, and the pro-monthly subscription
    await btcpay_shop(admin, btcpay, project_id=shop.project_id)
    assert await _offered(http, shop.project_id, "book") == ["stripe", "btcpay", "manual"]
    assert await _offered(http, shop.project_id, "pro-monthly") == ["stripe"]
    for provider in ("btcpay", "manual"):
        refused = await post_checkout(http, provider, shop, "pro-monthly")
        assert refused.status_code == 409, refused.text
        assert refused.json()["error"]["code"] == "subscription_not_supported"
    stored = await http.get(
        f"/api/projects/{shop.project_id}/transactions", headers=bearer(shop.test_key)
    )
    assert stored.json()["items"] == []  # refused before anything was stored
    project = await admin.ok("GET", f"/api/manage/projects/{shop.project_id}")
    crypto = next(p for p in project["providers"] if p["provider"] == "btcpay")
    assert list(crypto["availability"]["products"]) == ["pro-monthly"]


async def test_a_live_mode_without_its_webhook_secret_is_not_offered_and_says_so(node, http, sim):
    merchant = await Admin.account(node.url, "merchant@example.com")
    shop = await stripe_shop(merchant, sim)
    live = {"secretKey": SECRET_KEY.replace("test", "live"), "publishableKey": "pk_live_1234"}
    await merchant.provider(shop.project_id, "stripe", {"enabled": True, "live": live})
    project = await merchant.ok("GET", f"/api/manage/projects/{shop.project_id}")
    stripe = next(p for p in project["providers"] if p["provider"] == "stripe")
    assert stripe["availability"]["live"] == {"offered": False, "missing": ["webhookSecret"]}
    assert stripe["availability"]["test"] == {"offered": True, "missing": []}
    assert "stripe" in await _offered(http, shop.project_id, "book", "test")
    assert "stripe" not in await _offered(http, shop.project_id, "book", "live")

    shown = await trio.run_process(
        [sys.executable, "-m", "edge", "provider", "show", shop.project_id, "stripe"]
        + ["--data", str(node.ctx.settings.data_dir)],
        capture_stdout=True,
    )
    assert b"live: not offered to buyers, missing webhookSecret" in shown.stdout

    page = await merchant.http.get(f"/dashboard/p/{shop.project_id}/methods")
    assert page.status_code == 200
    said = "Live: Stripe has no webhook secret, so live buyers are not offered card payments."
    assert said in page.text
    assert "Not offered for Pro (pro-monthly): Pay by mail takes one-off payments only" in page.text
    await merchant.aclose()
