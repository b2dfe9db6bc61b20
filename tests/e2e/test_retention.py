"""The event feed keeps 90 days; transactions stay."""

from __future__ import annotations

from support.client import bearer, manual_shop

DAY_MS = 24 * 3600 * 1000


async def test_events_older_than_90_days_leave_the_feed(node, admin, http):
    shop = await manual_shop(admin)
    pid = shop.project_id
    old = (
        await http.post(
            f"/api/checkout/manual/{pid}", json={"productId": "book"}, headers=bearer(shop.live_key)
        )
    ).json()["txId"]
    await http.post(
        f"/api/projects/{pid}/transactions/{old}/mark-paid", headers=bearer(shop.live_key)
    )
    real = node.ctx.clock_ms
    node.ctx.clock_ms = lambda: real() + 91 * DAY_MS  # test clock: three months later
    try:
        fresh = (
            await http.post(
                f"/api/checkout/manual/{pid}",
                json={"productId": "book"},
                headers=bearer(shop.live_key),
            )
        ).json()["txId"]
        feed = (await http.get(f"/api/projects/{pid}/events", headers=bearer(shop.live_key))).json()
        assert [(e["type"], e["txId"]) for e in feed["items"]] == [("checkout.created", fresh)]
        kept = (
            await http.get(f"/api/projects/{pid}/transactions/{old}", headers=bearer(shop.live_key))
        ).json()
        assert kept["status"] == "succeeded" and kept["events"] == []
    finally:
        node.ctx.clock_ms = real
