"""Notifications survive a SIGKILL (CONTRACT 4.8): 1,000 events are being notified to a merchant
that fails every third request when the node is killed; after the restart every event reaches
the merchant at least once, each verified with the official ``standardwebhooks`` package.

The events are Stripe deliveries that match no checkout (stored as ``unmatched``, notified like
any other): webhook ingest takes 6,000 a minute, checkouts far fewer."""

from __future__ import annotations

from typing import Any

import httpx
import trio
from standardwebhooks import Webhook
from support.asgi import serve_asgi
from support.client import Admin, manual_shop
from support.nodes import NodeProcess
from support.stripe_events import event_body, signed, stripe_credentials
from support.waits import Pulse, bound

EVENTS = 1000


class FlakyMerchant:
    """Fails every third request, but not the same event twice: a second failure would wait the
    schedule's 5 minutes (the schedule has its own test), and durability is what is under test."""

    def __init__(self) -> None:
        self.requests = 0
        self.failed: set[str] = set()
        self.received: set[str] = set()
        self.verifier: Webhook | None = None
        self.took = Pulse()  # fired at each notification taken

    async def __call__(self, scope: dict[str, Any], body: bytes) -> tuple[int, bytes]:
        assert self.verifier is not None
        headers = {k.decode(): v.decode() for k, v in scope["headers"]}
        event = self.verifier.verify(body, headers)
        self.requests += 1
        if self.requests % 3 == 0 and event["id"] not in self.failed:
            self.failed.add(event["id"])
            return 500, b""
        self.received.add(event["id"])
        self.took.fire()
        return 204, b""


async def test_every_event_owed_at_a_sigkill_reaches_the_merchant_after_the_restart(tmp_path):
    process = NodeProcess(tmp_path / "data")
    await trio.to_thread.run_sync(process.start)
    merchant = FlakyMerchant()
    try:
        async with trio.open_nursery() as nursery, httpx.AsyncClient(timeout=bound(30)) as http:
            base = await nursery.start(serve_asgi, merchant)
            admin = Admin(process.url, process.admin_token)
            shop = await manual_shop(admin)
            await admin.provider(
                shop.project_id, "stripe", {"enabled": True, "test": stripe_credentials()}
            )
            endpoint = await admin.ok(
                "POST",
                f"/api/manage/projects/{shop.project_id}/endpoints",
                # the events below match no checkout: only an endpoint that names unmatched
                # events takes them (CONTRACT 4.3a)
                {
                    "url": base.replace("127.0.0.1", "localhost") + "/hooks",
                    "mode": "test",
                    "types": ["unmatched"],
                },
                201,
            )
            merchant.verifier = Webhook(endpoint["secret"])
            await admin.aclose()

            made: list[str] = []

            async def deliveries(first: int, count: int) -> None:
                for n in range(first, first + count):
                    body = event_body(f"evt_durable_{n:05d}", "charge.refunded", {"id": f"ch_{n}"})
                    answer = await http.post(
                        f"{process.url}/webhook/stripe/{shop.project_id}",
                        content=body,
                        headers=signed(body),
                    )
                    assert answer.status_code == 200, answer.text
                    made.append(answer.json()["eventId"])

            async with trio.open_nursery() as makers:
                for part in range(10):
                    makers.start_soon(deliveries, part * EVENTS // 10, EVENTS // 10)
            assert len(made) == EVENTS
            process.kill()  # while notifications are still being sent and retried
            received_before = len(merchant.received)

            await trio.to_thread.run_sync(process.start)
            feed_ids: set[str] = set()
            after = None
            while True:
                params = {"limit": 100, **({"after": after} if after else {})}
                page = (
                    await http.get(
                        f"{process.url}/api/projects/{shop.project_id}/events",
                        params=params,
                        headers={"Authorization": f"Bearer {shop.test_key}"},
                    )
                ).json()
                feed_ids |= {e["id"] for e in page["items"]}
                after = page["next"]
                if not page["hasMore"]:
                    break
            assert feed_ids == set(made)  # every delivery acknowledged was kept
            await merchant.took.until(
                lambda: feed_ids <= merchant.received,
                what="every event of the feed taken by the merchant",
                timeout_s=60,
            )
            assert received_before < EVENTS  # the kill did come while some were still owed
            nursery.cancel_scope.cancel()
    finally:
        if process.proc and process.proc.poll() is None:
            process.kill()
