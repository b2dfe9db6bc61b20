"""A node that never simulates, for tests/e2e/test_sim_free_node.py: it imports ``edge.node``,
starts a node on port 0, serves a checkout, a verified webhook and a status poll, then one
``edge trigger``, and prints as JSON which ``edge.sim`` modules were loaded at each step and
what the node answered. Run as its own process: the test's own process has loaded the
simulators long before."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import trio

from edge.node import open_node

MAILING_ADDRESS = {"name": "Shop Ltd", "lines": ["1 Main St", "London"], "country": "GB"}
WEBHOOK_SECRET = "whsec_test_0123456789abcdefghijklmnop"


async def ok(request: Any) -> Any:
    answer = await request
    assert answer.is_success, answer.text
    return answer.json()


def simulators() -> list[str]:
    return sorted(m for m in sys.modules if m == "edge.sim" or m.startswith("edge.sim."))


async def main(data: Path) -> dict[str, Any]:
    from edge.config import Settings
    from edge.providers.stripe.signature import sign_header

    seen: dict[str, Any] = {"imported": simulators()}
    settings = Settings.load(data, host="127.0.0.1", port=0)
    async with open_node(settings) as running:
        seen["started"] = simulators()
        headers = {"Authorization": f"Bearer {settings.admin_token}"}
        async with httpx.AsyncClient(base_url=running.url, headers=headers, timeout=30) as api:
            project = {
                "name": "Shop",
                "successUrl": "https://shop.example/thanks",
                "cancelUrl": "https://shop.example/cart",
            }
            pid = (await ok(api.post("/api/manage/projects", json=project)))["id"]
            base = f"/api/manage/projects/{pid}"
            product = {"name": "A book", "kind": "payment", "amount": 19.99, "currency": "EUR"}
            await ok(api.put(f"{base}/products/book", json=product))
            manual = {"enabled": True, "test": {"mailingAddress": MAILING_ADDRESS}}
            await ok(api.put(f"{base}/providers/manual", json=manual))
            stripe = {
                "secretKey": "sk_test_0123456789abcdefghij",
                "publishableKey": "pk_test_0123456789abcdefghij",
                "webhookSecret": WEBHOOK_SECRET,
            }
            await ok(api.put(f"{base}/providers/stripe", json={"enabled": True, "test": stripe}))
            key = (await ok(api.post(f"{base}/keys", json={"mode": "test"})))["key"]
            checkout = await api.post(
                f"/api/checkout/manual/{pid}",
                json={"productId": "book"},
                headers={"Authorization": f"Bearer {key}"},
            )
            tx_id = checkout.json()["txId"]
            event = {
                "id": "evt_1NodeWithoutSimulators",
                "object": "event",
                "type": "customer.created",
                "created": int(time.time()),
                "data": {"object": {"id": "cus_NodeWithoutSimulators", "object": "customer"}},
            }
            body = json.dumps(event).encode()
            webhook = await api.post(
                f"/webhook/stripe/{pid}",
                content=body,
                headers={
                    "Content-Type": "application/json",
                    "Stripe-Signature": sign_header(WEBHOOK_SECRET, body, int(time.time())),
                },
            )
            status = await api.get(f"/status/{pid}/{tx_id}")
            seen["answered"] = [checkout.status_code, webhook.status_code, status.status_code]
            seen["served"] = simulators()
            # pay by mail has nothing to simulate: the trigger loads the simulators to say so
            trigger = await api.post(
                "/api/manage/trigger",
                json={"provider": "manual", "type": "payment.succeeded", "txId": tx_id},
            )
            seen["trigger"] = [trigger.status_code, trigger.json()["error"]["code"]]
            seen["triggered"] = simulators()
        running.stop.set()
    return seen


if __name__ == "__main__":
    print(json.dumps(trio.run(main, Path(sys.argv[1]))), flush=True)
