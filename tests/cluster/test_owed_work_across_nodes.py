"""Notifications owed across nodes (cluster mode on PostgreSQL): one under way on the node that
gives its project up is not sent again by the new holder, and one a dead node owed is sent by
a node left, without anything else happening there to wake it."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
import trio
from support.client import Admin, manual_shop
from support.cluster_nodes import cluster_node
from support.merchant import listening
from support.postgres import execute, require_psycopg
from support.waits import until

require_psycopg()

from edge.store import outbox  # noqa: E402
from edge.store.codec import unpack  # noqa: E402


class Merchant:
    """The merchant's endpoint: each delivery's webhook-id and what it was answered. The
    first delivery is held until ``release`` is set (``hold``) or answered 500 (``fail``);
    every later one is answered 200 at once."""

    def __init__(self, first: str) -> None:
        self.first = first
        self.got: list[tuple[str, int]] = []
        self.release = trio.Event()

    async def __call__(self, scope: dict[str, Any], body: bytes) -> tuple[int, bytes]:
        headers = {k.decode(): v.decode() for k, v in scope["headers"]}
        first = not self.got
        status = 500 if first and self.first == "fail" else 200
        self.got.append((headers["webhook-id"], status))
        if first and self.first == "hold":
            await self.release.wait()
        return status, b""


async def _notify_rows(pg_url: str) -> dict[bytes, bytes]:
    rows = await trio.to_thread.run_sync(
        execute, pg_url, "SELECT key, value FROM store_notify ORDER BY key"
    )
    return {bytes(key): bytes(value) for key, value in rows}


async def _entries(pg_url: str) -> tuple[dict[str, dict[str, Any]], list[bytes]]:
    """The notification queue's entries by id, and its queue keys."""
    rows = await _notify_rows(pg_url)
    entries = {
        key[len(outbox.ENTRY) :].decode(): unpack(value)
        for key, value in rows.items()
        if key.startswith(outbox.ENTRY)
    }
    return entries, [key for key in rows if key.startswith(outbox.QUEUE)]


# node b's machine clock as node a's, and 40 s ahead: past an attempt's hold (the notifier's
# TAKEN_S, 25 s), so by its own clock node b would find node a's attempt's hold over
CLOCKS_OFF_S = (0.0, 40.0)


@pytest.mark.parametrize("b_ahead_s", CLOCKS_OFF_S)
async def test_a_notification_under_way_at_a_hand_over_is_not_sent_again(
    tmp_path, pg_url, b_ahead_s
):
    """Node a is sending a notification (its endpoint has not answered yet) when HAProxy sends
    the project to node b, which takes it over and commits there, waking its notifier: the
    entry is node a's attempt's (taken), so node b sends nothing; node a's 200 settles it,
    and no queue key is left for an entry no longer pending. So too when node b's clock is
    ahead by more than the hold: both nodes stamp and compare by PostgreSQL's time."""
    merchant = Merchant("hold")
    async with (
        trio.open_nursery() as nursery,
        cluster_node(nursery, tmp_path / "a", pg_url, "node-a") as a,
        cluster_node(
            nursery, tmp_path / "b", pg_url, "node-b", like=tmp_path / "a", clock_off_s=b_ahead_s
        ) as b,
        httpx.AsyncClient(base_url=a.url) as to_a,
        httpx.AsyncClient(base_url=b.url) as to_b,
    ):
        admin = Admin(a.url, a.ctx.settings.admin_token)
        shop = await manual_shop(admin)
        pid = shop.project_id
        await listening(nursery, merchant, admin, pid, mode="live", types=["checkout.created"])
        created = await to_a.post(f"/api/checkout/manual/{pid}", json={"productId": "book"})
        assert created.status_code == 201, created.text
        await until(lambda: merchant.got, what="node a's delivery arrives")

        moved = await to_b.get(f"/status/{pid}/{created.json()['txId']}")
        assert moved.status_code == 200, moved.text
        assert b.ctx.ownership.taken == 1
        # a commit on node b wakes its notifier, which reads node a's entry, due and pending
        again = await to_b.post(f"/api/checkout/manual/{pid}", json={"productId": "book"})
        assert again.status_code == 201, again.text
        await until(lambda: len(merchant.got) >= 2, what="node b's own checkout is told")
        merchant.release.set()

        async def settled() -> bool:
            entries, _ = await _entries(pg_url)
            return all(e["state"] == outbox.DONE for e in entries.values())

        await until(settled, what="both notifications settled", timeout_s=60.0, every=0.2)
        ids = [webhook_id for webhook_id, _ in merchant.got]
        # CONTRACT 4.3a: delivered again only when an earlier delivery was not acknowledged
        assert len(ids) == len(set(ids)) == 2, merchant.got
        entries, queued = await _entries(pg_url)
        assert queued == [] and [e["attempts"] for e in entries.values()] == [1, 1]
        await admin.aclose()
        nursery.cancel_scope.cancel()


async def test_a_notification_a_dead_node_owed_is_sent_by_a_node_left(tmp_path, pg_url):
    """Node a dies holding its project's lease (as after SIGKILL: nothing given back) with a
    notification owed, its first attempt answered 500. Node b's notifier had nothing due when
    it last looked, and nothing happens on node b: its heartbeat sees node a stop beating and
    wakes it, and node b takes the project up and sends the notification."""
    merchant = Merchant("fail")
    async with trio.open_nursery() as nursery:
        async with (
            trio.open_nursery() as nodes,
            cluster_node(nodes, tmp_path / "b", pg_url, "node-b"),
        ):
            async with (
                trio.open_nursery() as a_nursery,
                cluster_node(a_nursery, tmp_path / "a", pg_url, "node-a", like=tmp_path / "b") as a,
                httpx.AsyncClient(base_url=a.url) as to_a,
            ):
                admin = Admin(a.url, a.ctx.settings.admin_token)
                shop = await manual_shop(admin)
                await listening(
                    nursery,
                    merchant,
                    admin,
                    shop.project_id,
                    mode="live",
                    types=["checkout.created"],
                )
                created = await to_a.post(
                    f"/api/checkout/manual/{shop.project_id}", json={"productId": "book"}
                )
                assert created.status_code == 201, created.text
                await until(lambda: merchant.got, what="node a's first attempt")

                async def killed() -> None:
                    return None  # the leases stay to their end

                a.ctx.ownership.release_all = killed  # type: ignore[method-assign]
                await admin.aclose()
            await until(
                lambda: len(merchant.got) >= 2, what="node b sends it", timeout_s=60.0, every=0.2
            )
            assert merchant.got[1] == (merchant.got[0][0], 200)
            nodes.cancel_scope.cancel()
        nursery.cancel_scope.cancel()
