"""``make bench-asking``: what asking the provider costs it, and how soon a payment whose
webhook never comes is known (CONTRACT 4.3a, issue 33's figures).

One node (on LMDB, in this process), one Stripe simulator that counts the node's requests and
drops every webhook. ``--checkouts`` pending checkouts (10,000 by default) are made on one
Stripe account, then one of them is paid at the simulator. The figures:

- the node's requests to the account, per second: the most in any one second, and the mean
  over the run, against ``EDGE_SYNC_RATE`` (at most that many a second, whatever the number of
  pending checkouts);
- how long after the payment the node knew it, against ``EDGE_SYNC_EVERY_S``;
- the requests in all.

The period is shortened (``--every``, 20 s by default) so a run takes minutes; the node asks
the same way with the default 300 s.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from collections import Counter
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import trio

from bench.shop import TIER, write_config
from edge.config import Settings
from edge.node import run_node
from edge.sim.stripe import StripeSimulator

SECRET_KEY = "sk_test_asking"


def _counting(sim: StripeSimulator, counts: Counter[int]) -> None:
    """Count each API request the node makes to the simulator, by the second it came in."""
    served = sim._served  # noqa: SLF001 (the simulator's ASGI app, wrapped once here)

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope.get("type") == "http" and scope.get("path", "").startswith("/v1/"):
            counts[int(time.monotonic())] += 1
        await served(scope, receive, send)

    sim._served = app  # noqa: SLF001


async def _run(args: argparse.Namespace) -> dict[str, Any]:
    counts: Counter[int] = Counter()
    sim = StripeSimulator()
    sim.webhook_faults.drop()  # no webhook ever reaches the node
    _counting(sim, counts)
    with tempfile.TemporaryDirectory() as data:
        # the bench tier: no rate limit on the 10,000 checkouts (they are not what is measured)
        os.environ["EDGE_CONFIG"] = str(write_config(Path(data) / "bench.toml"))
        settings = Settings.load(
            Path(data) / "node",
            host="127.0.0.1",
            port=0,
            provider_hosts_allow=frozenset({"127.0.0.1"}),
            sync_every_s=float(args.every),
            sync_rate=float(args.rate),
        )
        async with sim.serving() as sim_url, trio.open_nursery() as nursery:
            node = await nursery.start(partial(run_node, settings))
            token = settings.admin_token
            auth = {"Authorization": f"Bearer {token}"}
            async with httpx.AsyncClient(base_url=node.url, headers=auth, timeout=60) as http:
                project = await _shop(http, sim, sim_url)
                made_at = time.monotonic()
                txs = await _checkouts(http, project, args.checkouts)
                made_s = time.monotonic() - made_at
                counts.clear()  # what is measured: the asking, not the checkouts' creation
                asked_from = time.monotonic()
                paid_tx, session = txs[len(txs) // 2]
                await trio.sleep(args.every)  # the checkouts are all pending for a while
                await sim.complete(session)
                paid_at = time.monotonic()
                known_s = await _until_known(http, project, paid_tx, args.every * 4)
                await trio.sleep(max(0.0, args.every * 2 - (time.monotonic() - paid_at)))
                span = max(1.0, time.monotonic() - asked_from)
            nursery.cancel_scope.cancel()
    per_second = [counts.get(s, 0) for s in range(int(asked_from), int(asked_from + span))]
    return {
        "checkouts": args.checkouts,
        "every_s": args.every,
        "rate_per_s": args.rate,
        "checkouts_made_s": round(made_s, 1),
        "requests": sum(per_second),
        "requests_per_s_max": max(per_second, default=0),
        "requests_per_s_mean": round(statistics.fmean(per_second), 2) if per_second else 0,
        "payment_known_after_s": None if known_s is None else round(known_s, 1),
    }


async def _shop(http: httpx.AsyncClient, sim: StripeSimulator, sim_url: str) -> str:
    made = await http.post(
        "/api/manage/projects",
        json={
            "name": "Asking",
            "successUrl": "https://shop.example/ok",
            "cancelUrl": "https://shop.example/no",
            "allowedOrigins": ["https://shop.example"],
            "tier": TIER,
        },
    )
    made.raise_for_status()
    project = str(made.json()["id"])
    product = {"name": "Ten", "kind": "payment", "amount": 10, "currency": "EUR"}
    (
        await http.put(f"/api/manage/projects/{project}/products/ten", json=product)
    ).raise_for_status()
    secret = sim.register_endpoint(SECRET_KEY, f"{http.base_url}webhook/stripe/{project}")
    credentials = {
        "secretKey": SECRET_KEY,
        "publishableKey": "pk_test_asking0123456789abcdef",
        "webhookSecret": secret,
        "apiBase": sim_url,
    }
    setting = {"enabled": True, "test": credentials}
    (
        await http.put(f"/api/manage/projects/{project}/providers/stripe", json=setting)
    ).raise_for_status()
    return project


async def _checkouts(http: httpx.AsyncClient, project: str, count: int) -> list[tuple[str, str]]:
    """``count`` pending checkouts, 16 at a time: (tx id, Stripe session id) each."""
    made: list[tuple[str, str]] = []
    limit = trio.CapacityLimiter(16)

    async def one() -> None:
        async with limit:
            answer = await http.post(
                f"/api/checkout/stripe/{project}", json={"productId": "ten", "mode": "test"}
            )
            answer.raise_for_status()
            body = answer.json()
            made.append((body["txId"], body["url"].rsplit("/", 1)[-1]))

    async with trio.open_nursery() as nursery:
        for _ in range(count):
            nursery.start_soon(one)
    return made


async def _until_known(
    http: httpx.AsyncClient, project: str, tx: str, give_up_s: float
) -> float | None:
    start = time.monotonic()
    with trio.move_on_after(give_up_s):
        while True:
            status = (await http.get(f"/status/{project}/{tx}")).json()["status"]
            if status == "succeeded":
                return time.monotonic() - start
            await trio.sleep(0.2)
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--checkouts", type=int, default=10_000)
    parser.add_argument("--every", type=float, default=20.0, help="EDGE_SYNC_EVERY_S")
    parser.add_argument("--rate", type=float, default=5.0, help="EDGE_SYNC_RATE")
    args = parser.parse_args()
    figures = trio.run(_run, args)
    print(json.dumps(figures, indent=2))
    bound = args.rate * 1  # a burst of one second's worth, then the rate
    ok = figures["requests_per_s_max"] <= bound + args.rate
    known = figures["payment_known_after_s"]
    print(
        f"requests to the account: at most {figures['requests_per_s_max']} a second"
        f" (rate {args.rate}): {'PASS' if ok else 'FAIL'}"
    )
    print(
        f"payment with no webhook known after {known} s (period {args.every} s):"
        f" {'PASS' if known is not None and known <= args.every + 5 else 'FAIL'}"
    )


if __name__ == "__main__":
    main()
