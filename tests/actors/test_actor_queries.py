"""Merchant listings read a bounded number of rows per request and page on from there."""

from __future__ import annotations

from support.client import bearer, manual_shop

from edge.actors import queries


async def test_a_sparse_filter_pages_through_in_bounded_steps(node, admin, http, monkeypatch):
    shop = await manual_shop(admin)
    pid = shop.project_id
    created = [
        (
            await http.post(
                f"/api/checkout/manual/{pid}",
                json={"productId": "book"},
                headers=bearer(shop.live_key),
            )
        ).json()["txId"]
        for _ in range(7)
    ]
    await http.post(
        f"/api/projects/{pid}/transactions/{created[0]}/mark-paid", headers=bearer(shop.live_key)
    )
    monkeypatch.setattr(queries, "SCAN_BUDGET", 3)
    found, after, pages = [], None, 0
    while True:
        params = {"status": "succeeded", **({"after": after} if after else {})}
        page = (
            await http.get(
                f"/api/projects/{pid}/transactions", params=params, headers=bearer(shop.live_key)
            )
        ).json()
        pages += 1
        found += [t["id"] for t in page["items"]]
        after = page["next"]
        if after is None:
            break
    assert found == [created[0]]  # the oldest, reached after reading 3 rows at a time
    assert pages == 3
