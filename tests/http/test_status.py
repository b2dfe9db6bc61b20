"""edge.http.status, the raw ASGI status route: methods, HEAD and OPTIONS, lengths, and long
polls that end when their client leaves. (Limits and long-poll timing: tests/e2e/test_limits.)"""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing
from support.client import manual_shop
from support.waits import bound

from edge.http.asgi import Disconnected
from edge.http.status import _unless_disconnected


async def test_status_answers_head_options_and_other_methods(admin, http, envelope):
    shop = await manual_shop(admin)
    tx = (
        await http.post(f"/api/checkout/manual/{shop.project_id}", json={"productId": "book"})
    ).json()["txId"]
    path = f"/status/{shop.project_id}/{tx}"
    get = await http.get(path)
    assert get.status_code == 200 and get.headers["content-type"] == "application/json"
    assert get.headers["content-length"] == str(len(get.content))
    assert get.headers["ratelimit-limit"] == "60"
    head = await http.head(path)
    assert head.status_code == 200 and head.content == b""
    assert head.headers["content-length"] == str(len(get.content))
    options = await http.options(
        path, headers={"Origin": "https://shop.example", "Access-Control-Request-Method": "GET"}
    )
    assert options.status_code == 200 and options.headers["content-length"] == "0"
    assert options.headers["allow"] == "GET, HEAD, OPTIONS"
    assert options.headers["access-control-allow-origin"] == "*"
    assert "GET" in options.headers["access-control-allow-methods"]
    post = await http.post(path)
    envelope(post, 405, "method_not_allowed")
    assert "GET" in post.headers["allow"]
    missing_head = await http.head(f"/status/{shop.project_id}/tx_01M7YS2H2CXEBWK64PPXXP5WHD")
    assert missing_head.status_code == 404 and missing_head.content == b""
    assert int(missing_head.headers["content-length"]) > 0


async def test_paths_of_the_wrong_shape_are_the_same_404(http, envelope):
    for path in ("/status/", "/status/prj_aaaaaaaaaaaaaaaa", "/status/a/b/c"):
        envelope(await http.get(path), 404, "not_found")


async def test_a_long_poll_ends_when_its_client_leaves():
    left = trio.Event()

    async def receive() -> dict[str, Any]:
        await left.wait()
        return {"type": "http.disconnect"}

    async def never_answers() -> None:
        await trio.sleep_forever()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(_expect_disconnected, receive, never_answers())
        await trio.testing.wait_all_tasks_blocked()
        left.set()


async def _expect_disconnected(receive: Any, call: Any) -> None:
    with trio.fail_after(bound(1)), pytest.raises(Disconnected):
        await _unless_disconnected(receive, call)


async def test_a_long_poll_answers_with_the_call():
    async def receive() -> dict[str, Any]:
        await trio.sleep_forever()
        raise AssertionError

    async def answers() -> str:
        return "record"

    assert await _unless_disconnected(receive, answers()) == "record"
