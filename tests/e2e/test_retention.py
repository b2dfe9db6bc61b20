"""The event feed keeps 90 days; transactions stay."""

from __future__ import annotations

from support.client import bearer, manual_shop
from support.merchant import add_endpoint
from support.stripe_events import event_body, signed, stripe_credentials
from support.waits import until

from edge.store import notifyq

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


async def test_whom_an_unmatched_event_was_told_to_leaves_with_the_event(node, admin, http):
    """An unmatched event's fan-out keeps the endpoints it was queued for (edge.store.notifyq,
    for a match that may come later): that goes when the event leaves the feed."""
    shop = await manual_shop(admin)
    pid = shop.project_id
    await admin.provider(pid, "stripe", {"enabled": True, "test": stripe_credentials()})
    await add_endpoint(admin, pid, url="http://localhost:9/hooks", mode="test", types=["unmatched"])
    body = event_body("evt_nobody_91", "charge.refunded", {"id": "ch_nobody"})
    answer = await http.post(f"/webhook/stripe/{pid}", content=body, headers=signed(body))
    evt_id = answer.json()["eventId"]
    told = notifyq.TOLD + evt_id.encode()

    async def kept() -> bool:
        return bool(await node.ctx.store.scan(told, db=notifyq.DB))

    await until(kept, what="the unmatched event fanned out")
    real = node.ctx.clock_ms
    node.ctx.clock_ms = lambda: real() + 91 * DAY_MS  # test clock: three months later
    try:
        # a message to the project's actor prunes what has expired
        await http.post(f"/api/checkout/manual/{pid}", json={"productId": "book"})

        async def gone() -> bool:
            return not await kept()

        await until(gone, what="the fan-out's record pruned with its event")
    finally:
        node.ctx.clock_ms = real
