"""A thin client over the management API for arranging test projects."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx

from support.waits import bound

MAILING_ADDRESS = {"name": "Shop Ltd", "lines": ["1 Main St", "London"], "country": "GB"}
ORIGIN = "https://shop.example"


class Admin:
    def __init__(self, url: str, token: str) -> None:
        self.url = url
        self.http = httpx.AsyncClient(
            base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=bound(30.0)
        )

    @classmethod
    async def account(cls, url: str, email: str, password: str = "a long enough password") -> Admin:
        """A client signed in as a new account (its session cookie and CSRF header): what it
        makes, the dashboard shows when opened with ``http``."""
        admin = cls(url, "")
        del admin.http.headers["Authorization"]
        made = await admin.http.post("/api/accounts", json={"email": email, "password": password})
        assert made.status_code == 201, made.text
        session = await admin.http.post("/api/session", json={"email": email, "password": password})
        assert session.status_code == 200, session.text
        admin.http.headers["Cm-Csrf"] = session.json()["csrfToken"]
        return admin

    async def aclose(self) -> None:
        await self.http.aclose()

    async def ok(self, method: str, path: str, json: Any = None, status: int = 200) -> Any:
        response = await self.http.request(method, path, json=json)
        assert response.status_code == status, (method, path, response.status_code, response.text)
        return response.json()

    async def project(self, name: str = "Shop", **fields: Any) -> str:
        body = {
            "name": name,
            "successUrl": f"{ORIGIN}/thanks",
            "cancelUrl": f"{ORIGIN}/cart",
            "allowedOrigins": [ORIGIN],
            **fields,
        }
        return (await self.ok("POST", "/api/manage/projects", body, 201))["id"]

    async def product(self, project_id: str, product_id: str = "book", **fields: Any) -> Any:
        body = {"name": "A book", "kind": "payment", "amount": 19.99, "currency": "EUR", **fields}
        return await self.ok(
            "PUT", f"/api/manage/projects/{project_id}/products/{product_id}", body
        )

    async def provider(self, project_id: str, provider: str, body: dict[str, Any]) -> Any:
        return await self.ok("PUT", f"/api/manage/projects/{project_id}/providers/{provider}", body)

    async def key(self, project_id: str, mode: str = "live") -> str:
        answer = await self.ok(
            "POST", f"/api/manage/projects/{project_id}/keys", {"mode": mode}, 201
        )
        return str(answer["key"])


@dataclass
class Shop:
    """A project with a product and pay-by-mail enabled in both modes, and a live and test key."""

    project_id: str
    live_key: str
    test_key: str


async def manual_shop(admin: Admin, product: dict[str, Any] | None = None) -> Shop:
    project_id = await admin.project()
    await admin.product(project_id, **(product or {}))
    await admin.provider(
        project_id,
        "manual",
        {
            "enabled": True,
            "test": {"mailingAddress": MAILING_ADDRESS},
            "live": {"mailingAddress": MAILING_ADDRESS},
        },
    )
    return Shop(
        project_id, await admin.key(project_id, "live"), await admin.key(project_id, "test")
    )


async def shop_or_new(admin: Admin, project_id: str | None) -> Shop:
    """``project_id`` with a live and a test key, or, given none, a new ``manual_shop``."""
    if project_id is None:
        return await manual_shop(admin)
    return Shop(
        project_id, await admin.key(project_id, "live"), await admin.key(project_id, "test")
    )


async def simulated(
    admin: Admin, provider: str, project_id: str, wire: Callable[[str], dict[str, Any]]
) -> dict[str, Any]:
    """``provider`` enabled in test mode on ``project_id`` with the credentials ``wire`` makes
    at its simulator for the node's webhook address (the simulator's ``registration``, as
    ``edge serve --demo`` wires one); those credentials."""
    test = wire(f"{admin.url}/webhook/{provider}/{project_id}")
    await admin.provider(project_id, provider, {"enabled": True, "order": 1, "test": test})
    return test


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


async def post_checkout(
    http: httpx.AsyncClient, provider: str, shop: Any, product_id: str, **body: Any
) -> httpx.Response:
    """``POST /api/checkout/{provider}/{project}`` for ``product_id`` (and the rest of
    ``body``), with the shop's test key: the answer, whatever it is."""
    return await http.post(
        f"/api/checkout/{provider}/{shop.project_id}",
        json={"productId": product_id, **body},
        headers=bearer(shop.test_key),
    )
