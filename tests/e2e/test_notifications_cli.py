"""``edge endpoint ...`` and ``edge listen`` against a running node, and the feed's long poll
that ``edge listen`` follows (CONTRACT 4.8, 10)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator
from functools import partial
from typing import Any

import pytest
import trio
from standardwebhooks import Webhook
from support.asgi import serving
from support.client import bearer, manual_shop
from support.merchant import Merchant
from support.waits import bound

from edge.domain import standard_webhooks


@pytest.fixture
async def inbox() -> AsyncIterator[tuple[Merchant, str]]:
    server = Merchant()
    async with serving(server) as url:
        yield server, url


async def edge(node: Any, *args: str) -> trio.CompletedProcess[bytes]:
    return await trio.run_process(
        [sys.executable, "-m", "edge", *args, "--data", str(node.ctx.settings.data_dir)],
        capture_stdout=True,
        capture_stderr=True,
        check=False,
    )


async def test_endpoint_commands_add_list_replay_show_attempts_and_remove(admin, http, node, inbox):
    server, base = inbox
    shop = await manual_shop(admin)
    pid = shop.project_id
    url = base.replace("127.0.0.1", "localhost") + "/hooks"
    added = await edge(node, "endpoint", "add", pid, url, "--mode", "live", "--json")
    assert added.returncode == 0, added.stderr
    made = json.loads(added.stdout)
    await http.post(f"/api/checkout/manual/{pid}", json={"productId": "book"})
    await server.wait_for(1)
    listed = await edge(node, "endpoint", "list", pid)
    assert made["endpointId"] in listed.stdout.decode() and "on " in listed.stdout.decode()
    replayed = await edge(node, "endpoint", "replay", pid, made["endpointId"])
    assert replayed.stdout.decode().strip() == "1 queued"
    await server.wait_for(2)
    attempts = await edge(node, "endpoint", "attempts", pid, made["endpointId"], "--json")
    items = json.loads(attempts.stdout)["items"]
    assert [(a["status"], a["outcome"]) for a in items] == [(200, "done"), (200, "done")]
    for headers, body in server.got:
        assert Webhook(made["secret"]).verify(body, headers)["type"] == "checkout.created"
    removed = await edge(node, "endpoint", "remove", pid, made["endpointId"])
    assert removed.returncode == 0
    refused = await edge(node, "endpoint", "add", pid, "http://169.254.169.254/x")
    assert refused.returncode == 1 and b"url_not_allowed" in refused.stderr


async def test_edge_listen_forwards_new_events_signed(admin, http, node, inbox):
    server, base = inbox
    shop = await manual_shop(admin)
    pid = shop.project_id
    await http.post(f"/api/checkout/manual/{pid}", json={"productId": "book"})  # before: skipped
    secret = standard_webhooks.new_secret()
    async with trio.open_nursery() as nursery:
        listening = await nursery.start(
            partial(
                trio.run_process,
                [
                    sys.executable, "-m", "edge", "listen", pid,
                    "--forward-to", f"{base}/local", "--secret", secret, "--once",
                    "--data", str(node.ctx.settings.data_dir),
                ],
                stdout=subprocess.PIPE,
            )
        )  # fmt: skip
        said = b""
        with trio.fail_after(bound(20)):  # it says "Ready." once it has found the feed's end
            while b"Ready." not in said:
                more = await listening.stdout.receive_some()
                assert more, f"edge listen ended before it was ready: {said!r}"
                said += more
        tx = (await http.post(f"/api/checkout/manual/{pid}", json={"productId": "book"})).json()
        with trio.fail_after(bound(20)):
            await listening.wait()
    ((headers, body),) = server.got
    event = Webhook(secret).verify(body, headers)
    assert (event["type"], event["txId"]) == ("checkout.created", tx["txId"])


async def test_the_feed_waits_for_what_comes_next(admin, http):
    shop = await manual_shop(admin)
    pid = shop.project_id
    first = await http.post(f"/api/checkout/manual/{pid}", json={"productId": "book"})
    feed = await http.get(f"/api/projects/{pid}/events", headers=bearer(shop.live_key))
    last = feed.json()["items"][-1]["id"]
    assert first.status_code == 201

    async def later() -> None:
        await trio.sleep(0.5)  # the subject: a change that comes while the poll waits
        await http.post(f"/api/checkout/manual/{pid}", json={"productId": "book"})

    async with trio.open_nursery() as nursery:
        nursery.start_soon(later)
        started = trio.current_time()
        waited = await http.get(
            f"/api/projects/{pid}/events",
            params={"after": last, "wait": 10},
            headers=bearer(shop.live_key),
        )
    assert 0.4 < trio.current_time() - started < 5
    assert [e["type"] for e in waited.json()["items"]] == ["checkout.created"]
    bad = await http.get(
        f"/api/projects/{pid}/events", params={"wait": 26}, headers=bearer(shop.live_key)
    )
    assert (bad.status_code, bad.json()["error"]["field"]) == (400, "wait")


async def test_edge_listen_finds_the_feeds_end_from_a_minute_back_not_from_its_start(
    admin, http, node, monkeypatch
):
    import argparse

    import httpx

    from edge.cli import listen
    from edge.domain import ids

    shop = await manual_shop(admin)
    pid = shop.project_id
    for _ in range(3):
        await http.post(f"/api/checkout/manual/{pid}", json={"productId": "book"})
    path = f"/api/projects/{pid}/events"
    feed = (await http.get(path, headers=bearer(shop.live_key))).json()["items"]
    asked: list[dict[str, Any]] = []
    request = httpx.request

    def noted(method: str, url: str, **kw: Any) -> httpx.Response:
        asked.append(dict(kw.get("params") or {}))
        return request(method, url, **kw)

    monkeypatch.setattr(httpx, "request", noted)
    args = argparse.Namespace(data=str(node.ctx.settings.data_dir), url=None, json=False)
    end = await trio.to_thread.run_sync(listen._feed_end, args, path)
    assert end == feed[-1]["id"]
    now = node.ctx.clock_ms()
    assert asked and all(
        now - 62_000 <= ids.ulid_time_ms(p["after"].removeprefix("evt_")) <= now for p in asked
    )


def test_edge_listen_keeps_its_secret_between_runs(tmp_path):
    from edge.cli.listen import LISTEN_SECRET_FILE, _kept_secret

    first = _kept_secret(tmp_path, renew=False)
    assert first.startswith("whsec_") and _kept_secret(tmp_path, renew=False) == first
    assert oct((tmp_path / LISTEN_SECRET_FILE).stat().st_mode & 0o777) == "0o600"
    renewed = _kept_secret(tmp_path, renew=True)
    assert renewed != first and _kept_secret(tmp_path, renew=False) == renewed
