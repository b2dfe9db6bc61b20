"""``edge serve --demo``: the node, every registered provider's simulator and a demo shop on
loopback, with a test project wired to them, so a person can buy and watch the status reach
``succeeded`` without any provider account. The providers come from ``edge.sim.registry`` (each
registration's ``demo`` credentials, in registration order). The project is kept in the
data dir and rewired on every start (a new simulator means a new webhook secret)."""

from __future__ import annotations

import json
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import trio

from edge.config import Settings
from edge.datadir import write_private
from edge.http.button import snippet
from edge.node import RunningNode, run_node
from edge.sim.registration import Simulator
from edge.sim.registry import REGISTRATIONS
from edge.sim.shop import DemoShop

DEMO_FILE = "demo.json"


async def run_demo(settings: Settings) -> None:
    sims: dict[str, Simulator | None] = {}
    async with trio.open_nursery() as nursery:
        for name, registration in REGISTRATIONS.items():
            if registration.demo is None:
                continue
            sim = registration.simulator() if registration.simulator else None
            if sim is not None:
                await nursery.start(sim.run)
            sims[name] = sim
        # the simulators listen on loopback: the operator of a demo allows exactly them
        loopback = {urlsplit(sim.url).netloc for sim in sims.values() if sim is not None}
        settings = replace(
            settings, provider_hosts_allow=settings.provider_hosts_allow | frozenset(loopback)
        )
        running: RunningNode = await nursery.start(partial(run_node, settings, handle_signals=True))
        card_forms = {
            name: card_form(sim)
            for name, sim in sims.items()
            if sim is not None and (card_form := REGISTRATIONS[name].card_form) is not None
        }
        shop = DemoShop(running.url, "", "", card_forms)
        await nursery.start(shop.run)
        demo = await _wire(running, sims, shop.url)
        shop.project_id = demo["projectId"]
        shop.script_tag = snippet(running.ctx.signer, running.url, demo["projectId"], "book").split(
            "\n"
        )[1]
        _announce(running, shop.url, demo)
        await running.stop.wait()  # SIGINT/SIGTERM: the node drains, then the helpers stop
        shop.stop()
        for sim in sims.values():
            if sim is not None:
                sim.stop()


async def _wire(
    running: RunningNode, sims: dict[str, Simulator | None], shop_url: str
) -> dict[str, Any]:
    path = running.ctx.settings.data_dir / DEMO_FILE
    saved = _load(path)
    headers = {"Authorization": f"Bearer {running.ctx.settings.admin_token}"}
    async with httpx.AsyncClient(base_url=running.url, headers=headers, timeout=30.0) as api:
        project_id = saved.get("projectId")
        if (
            not project_id
            or (await api.get(f"/api/manage/projects/{project_id}")).status_code != 200
        ):
            created = await _ok(
                api.post(
                    "/api/manage/projects",
                    json={
                        "name": "Demo shop",
                        "successUrl": f"{shop_url}/thanks",
                        "cancelUrl": f"{shop_url}/",
                        "allowedOrigins": [shop_url],
                    },
                )
            )
            project_id = created["id"]
        else:  # the shop listens on a new port each start
            await _ok(
                api.patch(
                    f"/api/manage/projects/{project_id}",
                    json={
                        "successUrl": f"{shop_url}/thanks",
                        "cancelUrl": f"{shop_url}/",
                        "allowedOrigins": [shop_url],
                    },
                )
            )
        base = f"/api/manage/projects/{project_id}"
        await _ok(
            api.put(
                f"{base}/products/book",
                json={"name": "A book", "kind": "payment", "amount": 19.99, "currency": "EUR"},
            )
        )
        await _ok(
            api.put(
                f"{base}/products/pro-monthly",
                json={
                    "name": "Pro",
                    "kind": "subscription",
                    "amount": 9,
                    "currency": "EUR",
                    "interval": "month",
                },
            )
        )
        for order, (name, sim) in enumerate(sims.items(), start=1):
            registration = REGISTRATIONS[name]
            assert registration.demo is not None
            credentials = registration.demo(sim, f"{running.url}/webhook/{name}/{project_id}")
            settings: dict[str, Any] = {"enabled": True, "order": order, "test": credentials}
            if registration.demo_label:
                settings["label"] = registration.demo_label
            await _ok(api.put(f"{base}/providers/{name}", json=settings))
        if saved.get("keyId"):
            await api.delete(f"{base}/keys/{saved['keyId']}")  # one live demo key at a time
        key = await _ok(api.post(f"{base}/keys", json={"mode": "test", "name": "demo"}))
    demo = {"projectId": project_id, "keyId": key["keyId"]}
    write_private(path, json.dumps(demo) + "\n")
    return {**demo, "key": key["key"]}


async def _ok(request: Any) -> Any:
    response = await request
    response.raise_for_status()
    return response.json()


def _load(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def _providers() -> str:
    return ", ".join(name for name, r in REGISTRATIONS.items() if r.simulator)


def _announce(running: RunningNode, shop_url: str, demo: dict[str, Any]) -> None:
    data = running.ctx.settings.data_dir
    print(
        f"""
edge demo is running (test mode, simulated {_providers()}; nothing leaves this machine)

  shop page:  {shop_url}/      <- open it, click Buy, pay on a simulated provider's page
  node:       {running.url}
  project:    {demo["projectId"]}
  test key:   {demo["key"]}

  try:  curl -H 'Authorization: Bearer {demo["key"]}' \\
          {running.url}/api/projects/{demo["projectId"]}/transactions
        edge events {demo["projectId"]} --data {data}
        edge trigger stripe payment.refunded --tx tx_... --data {data}
""",
        flush=True,
    )
