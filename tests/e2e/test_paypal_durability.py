"""The capture the node owes PayPal survives a SIGKILL (CONTRACT 4.3): the approval webhook is
acknowledged only once the capture is owed in the store; the node is killed right after, before
PayPal could capture; after the restart the capture is made, exactly once, and the payment
succeeds."""

from __future__ import annotations

import httpx
import trio
from support.client import Admin, bearer
from support.nodes import NodeProcess
from support.pages import press
from support.paypal_shop import paypal_shop
from support.waits import bound

from edge.sim.paypal import PayPalSimulator


async def test_a_capture_owed_at_a_sigkill_is_made_once_after_the_restart(tmp_path):
    process = NodeProcess(tmp_path / "data")
    await trio.to_thread.run_sync(process.start)
    sim = PayPalSimulator()
    try:
        async with trio.open_nursery() as nursery, httpx.AsyncClient(timeout=bound(30)) as buyer:
            await nursery.start(sim.run)
            admin = Admin(process.url, process.admin_token)
            shop = await paypal_shop(admin, sim)
            await admin.aclose()
            answer = await buyer.post(
                f"{process.url}/api/checkout/paypal/{shop.project_id}",
                json={"productId": "book"},
                headers=bearer(shop.test_key),
            )
            tx_id = answer.json()["txId"]
            order_id = sim.order_of(tx_id)

            sim.hold_captures = True  # PayPal is not capturing: the node's attempts wait
            await press(buyer, answer.json()["url"], "Approve")
            approval, _, acknowledged = sim.delivered[-1]
            assert (approval["event_type"], acknowledged) == ("CHECKOUT.ORDER.APPROVED", 200)
            process.kill()  # right after the 200: no drain, no clean close
            assert sim.capture_count(order_id) == 0

            sim.hold_captures = False
            await trio.to_thread.run_sync(process.start)
            status = (
                await buyer.get(
                    f"{process.url}/status/{shop.project_id}/{tx_id}",
                    params={"wait": 20, "version": 1},
                )
            ).json()
            assert (status["status"], status["version"]) == ("succeeded", 2)
            assert sim.capture_count(order_id) == 1
            tx = await buyer.get(
                f"{process.url}/api/projects/{shop.project_id}/transactions/{tx_id}",
                headers=bearer(shop.test_key),
            )
            types = [e["type"] for e in tx.json()["events"]]
            assert types.count("payment.succeeded") == 1, types
            sim.stop()
    finally:
        if process.proc and process.proc.poll() is None:
            process.kill()
