"""Many projects at once: no lost update, no cross-talk."""

from __future__ import annotations

import trio
from support.client import bearer, manual_shop


async def test_200_concurrent_mark_paid_and_status_across_20_projects_lose_nothing(
    node, admin, http
):
    shops = [await manual_shop(admin) for _ in range(20)]
    txs: list[tuple] = []
    for shop in shops:
        for _ in range(10):
            created = await http.post(
                f"/api/checkout/manual/{shop.project_id}", json={"productId": "book"}
            )
            txs.append((shop, created.json()["txId"]))
    answers: list[int] = []

    async def mark(shop, tx_id: str) -> None:
        response = await http.post(
            f"/api/projects/{shop.project_id}/transactions/{tx_id}/mark-paid",
            headers=bearer(shop.live_key),
        )
        answers.append(response.status_code)

    async def poll(shop, tx_id: str) -> None:
        response = await http.get(f"/status/{shop.project_id}/{tx_id}")
        assert response.status_code == 200
        assert response.json()["status"] in ("pending", "succeeded")

    async with trio.open_nursery() as nursery:
        for shop, tx_id in txs:  # 200 mark-paid and 200 status requests in flight together
            nursery.start_soon(mark, shop, tx_id)
            nursery.start_soon(poll, shop, tx_id)
    assert answers == [200] * 200
    for shop, tx_id in txs:
        status = (await http.get(f"/status/{shop.project_id}/{tx_id}")).json()
        assert (status["status"], status["version"]) == ("succeeded", 2)
    for shop in shops:
        feed = (
            await http.get(f"/api/projects/{shop.project_id}/events", headers=bearer(shop.live_key))
        ).json()
        assert sum(e["type"] == "manual.marked_paid" for e in feed["items"]) == 10
    # a second mark-paid of every transaction is refused: no double counting
    async with trio.open_nursery() as nursery:
        for shop, tx_id in txs[:20]:
            nursery.start_soon(mark, shop, tx_id)
    assert answers[200:] == [422] * 20


async def test_concurrent_mark_paid_of_one_transaction_succeeds_once(admin, http):
    shop = await manual_shop(admin)
    tx = (
        await http.post(f"/api/checkout/manual/{shop.project_id}", json={"productId": "book"})
    ).json()["txId"]
    codes: list[int] = []

    async def mark() -> None:
        response = await http.post(
            f"/api/projects/{shop.project_id}/transactions/{tx}/mark-paid",
            headers=bearer(shop.live_key),
        )
        codes.append(response.status_code)

    async with trio.open_nursery() as nursery:
        for _ in range(10):
            nursery.start_soon(mark)
    assert sorted(codes) == [200] + [422] * 9
    one = (
        await http.get(
            f"/api/projects/{shop.project_id}/transactions/{tx}", headers=bearer(shop.live_key)
        )
    ).json()
    assert [e["type"] for e in one["events"]].count("manual.marked_paid") == 1
