"""The node's live request log (``edge logs --follow``, ``edge tail``): every request and every
notification attempt as it happens, from an in-memory ring, filtered by project and status;
an account sees only its own projects' lines; nothing of a query string, a body or a secret.
And the notification endpoints' attempts on the dashboard."""

from __future__ import annotations

import json
import re
import select
import subprocess
import sys
import time
from collections.abc import AsyncIterator

import httpx
import pytest
import trio
from support.asgi import serve_asgi
from support.client import Admin, bearer, manual_shop
from support.merchant import Merchant, add_endpoint
from support.nodes import NodeProcess
from support.waits import bound

from edge.domain import ids


async def _logs(admin: Admin, **params: object) -> dict:
    answer = await admin.http.get("/api/manage/logs", params=params)
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


async def test_requests_are_logged_as_they_happen_and_filtered(admin, http):
    shop = await manual_shop(admin)
    pid = shop.project_id
    start = (await _logs(admin))["next"]
    made = await http.post(f"/api/checkout/manual/{pid}", json={"productId": "book"})
    tx_id = made.json()["txId"]
    await http.get(f"/status/{pid}/tx_01JD0000000000000000000000")  # a 404
    await http.get(
        f"/api/projects/{pid}/transactions",
        params={"reference": ids.new_reference_code()},
        headers=bearer(shop.test_key),
    )
    lines = (await _logs(admin, after=start))["items"]
    seen = [(line["method"], line["path"], line["status"]) for line in lines]
    assert ("POST", f"/api/checkout/manual/{pid}", 201) in seen
    assert ("GET", f"/status/{pid}/tx_01JD0000000000000000000000", 404) in seen
    assert all("?" not in line["path"] and "CM-" not in line["path"] for line in lines)
    assert {line["projectId"] for line in lines} == {pid}
    assert all(line["requestId"] and line["at"].endswith("Z") for line in lines)
    assert not any(line["path"] == "/api/manage/logs" for line in lines)
    errors = (await _logs(admin, after=start, status="4xx"))["items"]
    assert [(e["path"], e["status"]) for e in errors] == [
        (f"/status/{pid}/tx_01JD0000000000000000000000", 404)
    ]
    other = await manual_shop(admin)
    await http.get(f"/status/{other.project_id}/{tx_id}")
    mine = (await _logs(admin, after=start, projectId=other.project_id))["items"]
    assert {line["projectId"] for line in mine} == {other.project_id}
    refused = await admin.http.get("/api/manage/logs", params={"status": "4x"})
    assert refused.status_code == 400


async def test_a_long_poll_answers_with_the_next_request(admin, http):
    shop = await manual_shop(admin)
    cursor = (await _logs(admin))["next"]
    got: dict = {}

    async def follow() -> None:
        got.update(await _logs(admin, after=cursor, wait=20, projectId=shop.project_id))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(follow)
        with trio.fail_after(bound(15)):
            await http.get(f"/api/projects/{shop.project_id}/public-info")
    assert [line["path"] for line in got["items"]] == [
        f"/api/projects/{shop.project_id}/public-info"
    ]
    assert got["next"] == got["items"][-1]["seq"]


@pytest.fixture
async def receiver() -> AsyncIterator[tuple[Merchant, str]]:
    server = Merchant()
    async with trio.open_nursery() as nursery:
        base = await nursery.start(serve_asgi, server)
        yield server, base.replace("127.0.0.1", "localhost") + "/hooks"
        nursery.cancel_scope.cancel()


async def test_notification_attempts_are_logged_and_shown_on_the_dashboard(node, http, receiver):
    server, url = receiver
    merchant = await Admin.account(node.url, "hooks@example.com")
    shop = await manual_shop(merchant)
    server.status = 503
    endpoint = await add_endpoint(merchant, shop.project_id, url=url, mode="test")
    cursor = (await _logs(merchant))["next"]
    await http.post(
        f"/api/checkout/manual/{shop.project_id}", json={"productId": "book", "mode": "test"}
    )
    with trio.fail_after(bound(15)):
        while True:
            page = await _logs(merchant, after=cursor, wait=10)
            cursor = page["next"]
            sent = [line for line in page["items"] if line["kind"] == "notification"]
            if sent:
                break
    [attempt] = sent
    assert (attempt["endpointId"], attempt["status"], attempt["outcome"], attempt["attempt"]) == (
        endpoint["endpointId"],
        503,
        "retry",
        1,
    )
    # an account's log holds its own projects' lines only
    assert all(line["projectId"] == shop.project_id for line in page["items"])
    page = await merchant.http.get(f"/dashboard/p/{shop.project_id}/endpoints")
    assert "Delivery attempts to" in page.text
    row = re.search(rf"{attempt['eventId']}.*?</tr>", page.text, re.S)
    assert row is not None and "HTTP 503" in row.group(0) and "will retry" in row.group(0)
    await merchant.aclose()


def test_edge_tail_follows_the_node_and_edge_logs_filters(tmp_path):
    node = NodeProcess(tmp_path / "data").start()
    try:
        data = str(node.data_dir)
        with subprocess.Popen(
            [sys.executable, "-m", "edge", "tail", "--status", "404", "--json", "--data", data],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        ) as tail:
            missing = "/status/prj_aaaaaaaaaaaaaaaa/tx_01JD0000000000000000000000"
            deadline = time.monotonic() + bound(20)
            line = None
            while line is None:
                assert time.monotonic() < deadline and tail.poll() is None
                httpx.get(f"{node.url}{missing}")  # after tail started: it comes as it happens
                ready, _, _ = select.select([tail.stdout], [], [], 5)
                if ready:
                    line = json.loads(tail.stdout.readline())
            tail.terminate()
            assert (line["path"], line["status"]) == (missing, 404)
        once = subprocess.run(
            [sys.executable, "-m", "edge", "logs", "--status", "4xx", "--data", data],
            capture_output=True,
            text=True,
            timeout=bound(30),
        )
        assert once.returncode == 0 and f"GET    {missing}  404" in once.stdout
    finally:
        node.terminate()
