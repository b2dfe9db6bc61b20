"""A store filled through a real node, and what a node answers about it: the tests of a store
moved (pg_dump and pg_restore, a copy between the engines) fill one, move it, and require the
node on the moved store to answer the same."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import httpx

from edge.config import ADMIN_TOKEN_FILE, SECRET_KEY_FILE
from edge.signing import SIGNING_KEY_FILE
from edge.sim.stripe import StripeSimulator
from support.client import Admin, bearer
from support.stripe_shop import StripeShop, stripe_shop

PUBLIC_URL = "https://pay.example"  # every node the same: public-info names it in icon URLs


def same_keys(data: Path, like: Path) -> None:
    """A new data dir ``data`` with the sealing key, signing key and operator's token of
    ``like``: what opens a moved store (docs/cluster.md)."""
    data.mkdir(parents=True, exist_ok=True)
    for name in (SECRET_KEY_FILE, SIGNING_KEY_FILE, ADMIN_TOKEN_FILE):
        if (like / name).exists():
            shutil.copy(like / name, data / name)


async def fill(url: str, token: str, sim: StripeSimulator) -> StripeShop:
    """A shop with pay by mail and Stripe (its secrets sealed in the store), an API key of each
    mode, and checkouts: one paid, one canceled, one pending by mail, one pending by Stripe."""
    admin = Admin(url, token)
    try:
        shop = await stripe_shop(admin, sim)
        pid = shop.project_id
        async with httpx.AsyncClient(base_url=url, headers=bearer(shop.live_key)) as live:
            made = []
            for _ in range(3):
                answer = await live.post(f"/api/checkout/manual/{pid}", json={"productId": "book"})
                assert answer.status_code == 201, answer.text
                made.append(answer.json()["txId"])
            paid = await live.post(f"/api/projects/{pid}/transactions/{made[0]}/mark-paid")
            assert paid.status_code == 200, paid.text
            canceled = await live.post(f"/api/projects/{pid}/transactions/{made[1]}/cancel")
            assert canceled.status_code == 200, canceled.text
        async with httpx.AsyncClient(base_url=url, headers=bearer(shop.test_key)) as test:
            card = await test.post(f"/api/checkout/stripe/{pid}", json={"productId": "book"})
            assert card.status_code == 201, card.text
        return shop
    finally:
        await admin.aclose()


async def answers(url: str, token: str, shop: StripeShop) -> dict[str, Any]:
    """What the node answers about ``shop``: the operator's and a key's list of transactions,
    each one's status and history, the event feed, the project's settings, and the signed
    public-info with the keys that verify it. The answers of a store ``fill`` made hold its four
    transactions and their six events."""
    pid = shop.project_id
    out: dict[str, Any] = {}
    async with (
        httpx.AsyncClient(base_url=url, headers=bearer(token)) as operator,
        httpx.AsyncClient(base_url=url, headers=bearer(shop.live_key)) as live,
        httpx.AsyncClient(base_url=url) as public,
    ):
        out["transactions"] = _ok(await operator.get(f"/api/projects/{pid}/transactions"))
        out["live"] = _ok(await live.get(f"/api/projects/{pid}/transactions"))
        for tx in out["transactions"]["items"]:
            out[f"status {tx['id']}"] = _ok(await public.get(f"/status/{pid}/{tx['id']}"))
            out[f"tx {tx['id']}"] = _ok(
                await operator.get(f"/api/projects/{pid}/transactions/{tx['id']}")
            )
        out["events"] = _ok(await operator.get(f"/api/projects/{pid}/events?limit=500"))
        out["project"] = _ok(await operator.get(f"/api/manage/projects/{pid}"))
        info = await public.get(f"/api/projects/{pid}/public-info?productId=book&mode=test")
        out["public-info"] = (_ok(info), info.headers["Cm-Signature"])
        out["signing keys"] = _ok(await public.get("/.well-known/cm-signing-keys"))
    return out


async def still_pays(url: str, shop: StripeShop) -> None:
    """A Stripe checkout on the node: its sealed secret key opened, and the simulator took it."""
    async with httpx.AsyncClient(base_url=url, headers=bearer(shop.test_key)) as test:
        card = await test.post(
            f"/api/checkout/stripe/{shop.project_id}", json={"productId": "book"}
        )
    assert card.status_code == 201, card.text


def _ok(answer: httpx.Response) -> Any:
    assert answer.status_code == 200, (answer.request.url, answer.status_code, answer.text)
    return answer.json()
