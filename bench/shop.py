"""Arranging the node under test through its management API: the bench configuration file, a
Stripe project with real transactions (created through the Stripe simulator), and many projects
for the memory figure."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import trio

from bench.loadgen import each_once, http_request
from edge.config import DEFAULT_RATE_LIMITS, read_admin_token
from edge.sim.stripe import StripeSimulator

TIER = "bench"
UNLIMITED = "{count = 1000000000, period_s = 1}"
WEBHOOK_SECRET = "whsec_benchbenchbenchbenchbenchbench"
SECRET_KEY = "sk_test_bench"
PUBLISHABLE_KEY = "pk_test_bench"
PRODUCT = {"name": "A book", "kind": "payment", "amount": 19.99, "currency": "EUR"}
AMOUNT_MINOR = 1999
ORIGIN = "https://shop.example"


def write_config(path: Path) -> Path:
    """EDGE_CONFIG for the bench: a ``bench`` tier whose buckets do not cap the load, and an
    operator bucket large enough to create 10,000 projects."""
    lines = ["[rate_limits]", f"manage = {UNLIMITED}", "", f"[tiers.{TIER}]"]
    lines += [
        "live_events = 1000000000",
        "test_events = 1000000000",
        "",
        f"[tiers.{TIER}.rate_limits]",
    ]
    lines += [f'"{bucket}" = {UNLIMITED}' for bucket in DEFAULT_RATE_LIMITS if bucket != "manage"]
    path.write_text("\n".join(lines) + "\n")
    return path


class Admin:
    """The operator's client (sync; setup is not measured)."""

    def __init__(self, url: str, data_dir: Path, token: str | None = None) -> None:
        """``token``: the operator's, when the node was given one (cluster nodes share theirs
        through ``EDGE_ADMIN_TOKEN``); else the one the node keeps in ``data_dir``."""
        self.url = url
        self.token = token or read_admin_token(data_dir)
        self.http = httpx.Client(base_url=url, headers=self.auth, timeout=30.0)

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    def ok(
        self, method: str, path: str, json: Any = None, status: int = 200, headers: Any = None
    ) -> Any:
        response = self.http.request(method, path, json=json, headers=headers)
        if response.status_code != status:
            raise RuntimeError(f"{method} {path}: {response.status_code} {response.text}")
        return response.json()

    def project(self, name: str, tier: str | None = TIER) -> str:
        body = {
            "name": name,
            "successUrl": f"{ORIGIN}/thanks",
            "cancelUrl": f"{ORIGIN}/cart",
            "allowedOrigins": [ORIGIN],
        }
        if tier:
            body["tier"] = tier
        return str(self.ok("POST", "/api/manage/projects", body, 201)["id"])

    def product(self, project_id: str, product_id: str = "book") -> None:
        self.ok("PUT", f"/api/manage/projects/{project_id}/products/{product_id}", PRODUCT)

    def provider(self, project_id: str, provider: str, body: dict[str, Any]) -> None:
        self.ok("PUT", f"/api/manage/projects/{project_id}/providers/{provider}", body)

    def key(self, project_id: str, mode: str) -> str:
        return str(
            self.ok("POST", f"/api/manage/projects/{project_id}/keys", {"mode": mode}, 201)["key"]
        )

    def stats(self) -> dict[str, Any]:
        return dict(self.ok("GET", "/api/manage/stats"))

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> Admin:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass
class StripeShop:
    project_id: str
    test_key: str
    txs: list[dict[str, Any]]  # as event_for_trigger wants them

    @property
    def webhook_path(self) -> str:
        return f"/webhook/stripe/{self.project_id}"

    def status_path(self, index: int = 0) -> str:
        return f"/status/{self.project_id}/{self.txs[index]['id']}"


@contextmanager
def stripe_simulator() -> Iterator[StripeSimulator]:
    """The Stripe simulator on a trio loop in a background thread (setup only)."""
    sim = StripeSimulator()
    ready = threading.Event()
    tokens: list[trio.lowlevel.TrioToken] = []

    async def serve() -> None:
        tokens.append(trio.lowlevel.current_trio_token())
        async with trio.open_nursery() as nursery:
            await nursery.start(sim.run)
            ready.set()

    thread = threading.Thread(target=trio.run, args=(serve,), daemon=True)
    thread.start()
    if not ready.wait(20):
        raise RuntimeError("the Stripe simulator did not start")
    try:
        yield sim
    finally:
        trio.from_thread.run_sync(sim.stop, trio_token=tokens[0])
        thread.join(20)


def stripe_shop(admin: Admin, transactions: int) -> StripeShop:
    """A bench-tier project with Stripe in test mode and ``transactions`` open Stripe checkouts."""
    return stripe_shops(admin, 1, transactions)[0]


def stripe_shops(admin: Admin, projects: int, transactions: int) -> list[StripeShop]:
    """``projects`` such projects, ``transactions`` checkouts each, made through one simulator."""
    shops = []
    with stripe_simulator() as sim:
        credentials = {
            "secretKey": SECRET_KEY,
            "publishableKey": PUBLISHABLE_KEY,
            "webhookSecret": WEBHOOK_SECRET,
            "apiBase": sim.url,
        }
        for _ in range(projects):
            project_id = admin.project("Bench shop")
            admin.product(project_id)
            test_key = admin.key(project_id, "test")
            admin.provider(project_id, "stripe", {"enabled": True, "test": credentials})
            made = asyncio.run(_checkouts(admin.url, project_id, test_key, transactions))
            # the Checkout Session the node created for each: the events are about it
            # (CONTRACT 4.3)
            txs = [
                {
                    "id": tx_id,
                    "providerRef": session_id,
                    "amount": AMOUNT_MINOR,
                    "currency": "EUR",
                    "isTest": True,
                    "kind": "payment",
                }
                for tx_id, session_id in made
            ]
            shops.append(StripeShop(project_id, test_key, txs))
    return shops


async def _checkouts(url: str, project_id: str, key: str, count: int) -> list[tuple[str, str]]:
    """``count`` Stripe checkouts: each one's transaction id and Checkout Session id."""
    ids: list[tuple[str, str]] = []
    async with httpx.AsyncClient(
        base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=30.0
    ) as http:

        async def worker(n: int) -> None:
            for _ in range(n):
                response = await http.post(
                    f"/api/checkout/stripe/{project_id}", json={"productId": "book"}
                )
                if response.status_code != 201:
                    raise RuntimeError(f"checkout: {response.status_code} {response.text}")
                made = response.json()
                ids.append((made["txId"], made["url"].rsplit("/", 1)[-1]))

        workers = 16
        await asyncio.gather(
            *(worker(count // workers + (i < count % workers)) for i in range(workers))
        )
    return ids


def touch_projects(url: str, token: str, count: int) -> list[str]:
    """Create ``count`` projects, then have each serve one anonymous public-info request (which
    starts its actor). Returns the project ids."""
    body = json.dumps(
        {
            "name": "P",
            "successUrl": f"{ORIGIN}/thanks",
            "cancelUrl": f"{ORIGIN}/cart",
            "allowedOrigins": [ORIGIN],
        }
    ).encode()
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    create = http_request(url, "POST", "/api/manage/projects", headers, body)
    ids = []
    for status, answer in asyncio.run(each_once(url, [create] * count)):
        if status != 201:
            raise RuntimeError(f"create project: {status} {answer!r}")
        ids.append(json.loads(answer)["id"])
    touches = [
        http_request(url, "GET", f"/api/projects/{project_id}/public-info") for project_id in ids
    ]
    for status, answer in asyncio.run(each_once(url, touches)):
        if status != 200:
            raise RuntimeError(f"public-info: {status} {answer!r}")
    return ids
