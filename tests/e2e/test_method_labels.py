"""Labels and order of a project's payment methods are the merchant's (CONTRACT 4.1, 4.6):
set in the API and the dashboard, kept when credentials change, and two providers of one kind
are told apart by default ("Card", "Card (Stripe)") rather than shown as two identical rows."""

from __future__ import annotations

import re

from support.client import Admin
from support.paddle_shop import paddle_shop
from support.stripe_shop import stripe_shop


async def _shown(http, pid: str, product: str | None = None) -> list[tuple[str, str, int]]:
    params = {"mode": "test", **({"productId": product} if product else {})}
    info = (await http.get(f"/api/projects/{pid}/public-info", params=params)).json()
    return [(p["provider"], p["label"], p["order"]) for p in info["providers"]]


async def test_two_card_providers_are_told_apart_and_the_merchant_renames_and_reorders(
    admin, http, sim, paddle
):
    shop = await stripe_shop(admin, sim)
    pid = shop.project_id
    # both at order 1: a card form before a hosted card form, then by name
    await paddle_shop(admin, paddle, project_id=pid)
    assert await _shown(http, pid, "book") == [
        ("stripe", "Card", 1),
        ("paddle", "Card (Paddle)", 1),
        ("manual", "Pay by mail", 100),
    ]

    await admin.provider(pid, "stripe", {"enabled": True, "label": "Visa or Mastercard"})
    await admin.provider(pid, "paddle", {"enabled": True, "order": 2})
    assert await _shown(http, pid) == [
        ("stripe", "Visa or Mastercard", 1),
        ("paddle", "Card", 2),
        ("manual", "Pay by mail", 100),
    ]
    # new credentials keep the label and the order; null gives the default back
    await admin.provider(pid, "stripe", {"enabled": True, "test": {"publishableKey": "pk_test_2"}})
    assert (await _shown(http, pid))[0] == ("stripe", "Visa or Mastercard", 1)
    await admin.provider(pid, "stripe", {"enabled": True, "label": None, "order": None})
    assert await _shown(http, pid) == [
        ("paddle", "Card", 2),
        ("stripe", "Card (Stripe)", 100),  # with no order set, cards come first
        ("manual", "Pay by mail", 100),
    ]
    stripe = next(
        p
        for p in (await admin.ok("GET", f"/api/manage/projects/{pid}"))["providers"]
        if p["provider"] == "stripe"
    )
    assert stripe["test"]["publishableKey"] == "pk_test_2" and stripe["test"]["webhookSecret"]


async def test_the_dashboard_edits_labels_and_order(node, http, sim):
    merchant = await Admin.account(node.url, "labels@example.com")
    shop = await stripe_shop(merchant, sim)
    page = await merchant.http.get(f"/dashboard/p/{shop.project_id}/methods")
    csrf = re.search(r'name="csrf" value="([^"]+)"', page.text)
    assert csrf is not None
    saved = await merchant.http.post(
        f"/dashboard/p/{shop.project_id}/methods/manual/display",
        data={"csrf": csrf.group(1), "enabled": "on", "label": "Bank transfer", "order": "1"},
    )
    assert saved.status_code == 303, saved.text
    assert await _shown(http, shop.project_id) == [
        ("stripe", "Card", 1),  # the same order: cards first
        ("manual", "Bank transfer", 1),
    ]
    page = await merchant.http.get(f"/dashboard/p/{shop.project_id}/methods")
    assert 'value="Bank transfer"' in page.text
    seen = re.search(r'<ol class="seen">(.*?)</ol>', page.text, re.S)
    assert seen is not None and seen.group(1).index("Card") < seen.group(1).index("Bank transfer")
    # saving credentials leaves the label, the order and on/off alone
    saved = await merchant.http.post(
        f"/dashboard/p/{shop.project_id}/methods/manual",
        data={
            "csrf": csrf.group(1),
            "mode": "test",
            "addressName": "Shop Two",
            "addressLines": "2 Road",
            "addressCountry": "GB",
        },
    )
    assert saved.status_code == 303, saved.text
    assert (await _shown(http, shop.project_id))[1] == ("manual", "Bank transfer", 1)
    refused = await merchant.http.post(
        f"/dashboard/p/{shop.project_id}/methods/manual/display",
        data={"csrf": csrf.group(1), "enabled": "on", "order": "first"},
    )
    assert refused.status_code == 400 and 'role="alert"' in refused.text
    await merchant.aclose()
