"""SSRF through provider settings (CONTRACT 4.6): a node whose operator allows no extra hosts
refuses every address that is not a public https one, says which field, and stores nothing."""

from __future__ import annotations

from functools import partial

import pytest
import trio
from domain.test_domain_egress import REFUSED
from support.client import Admin
from support.nodes import node_settings
from support.stripe_events import stripe_credentials

from edge.node import run_node


@pytest.fixture
async def strict_admin(tmp_path):  # type: ignore[no-untyped-def]
    settings = node_settings(tmp_path / "strict", provider_hosts_allow=frozenset())
    async with trio.open_nursery() as nursery:
        running = await nursery.start(partial(run_node, settings))
        admin = Admin(running.url, running.ctx.settings.admin_token)
        yield admin
        await admin.aclose()
        running.stop.set()


async def test_every_internal_address_is_refused_and_nothing_is_stored(strict_admin):
    project_id = await strict_admin.project()
    path = f"/api/manage/projects/{project_id}/providers/stripe"
    good = stripe_credentials(api_base="https://api.stripe.com")
    await strict_admin.ok("PUT", path, {"enabled": True, "test": good})
    before = await strict_admin.ok("GET", f"/api/manage/projects/{project_id}")
    for url in [u for u in REFUSED if isinstance(u, str) and u]:
        answer = await strict_admin.http.put(
            path, json={"enabled": True, "test": {**good, "apiBase": url}}
        )
        assert answer.status_code == 400, (url, answer.text)
        error = answer.json()["error"]
        assert (error["code"], error["field"]) == ("url_not_allowed", "test.apiBase"), url
    assert await strict_admin.ok("GET", f"/api/manage/projects/{project_id}") == before


async def test_a_public_https_address_is_kept(strict_admin):
    project_id = await strict_admin.project()
    path = f"/api/manage/projects/{project_id}/providers/stripe"
    body = {"enabled": True, "test": stripe_credentials(api_base="https://api.stripe.com/")}
    stored = await strict_admin.ok("PUT", path, body)
    assert stored["test"]["apiBase"] == "https://api.stripe.com"
