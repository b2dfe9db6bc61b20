"""CONTRACT 3, 4.1, 4.2 and 8 under abuse: rate limits, proxies, quotas, idempotency, long poll."""

from __future__ import annotations

from collections.abc import AsyncIterator
from functools import partial

import httpx
import pytest
import trio
import trio.lowlevel
from support.client import Admin, bearer, manual_shop
from support.nodes import node_settings
from support.stripe_events import event_body, signed, stripe_credentials
from support.waits import bound

from edge.domain.quota import Tier
from edge.domain.rate import Limit
from edge.node import RunningNode, run_node

MISSING_TX = "tx_01M7YS2H2CXEBWK64PPXXP5WHD"


async def _status(http, shop, tx=MISSING_TX, **kwargs):
    return await http.get(f"/status/{shop.project_id}/{tx}", **kwargs)


async def test_status_allows_exactly_60_per_minute_per_ip_then_429(admin, http):
    shop = await manual_shop(admin)
    tx = (
        await http.post(f"/api/checkout/manual/{shop.project_id}", json={"productId": "book"})
    ).json()["txId"]
    remaining = []
    for _ in range(60):
        response = await _status(http, shop, tx)
        assert response.status_code == 200
        assert response.headers["ratelimit-limit"] == "60"
        remaining.append(int(response.headers["ratelimit-remaining"]))
    assert remaining[0] == 59 and remaining[-1] == 0
    refused = await _status(http, shop, tx)
    assert refused.status_code == 429
    assert refused.json()["error"]["code"] == "rate_limited"
    assert refused.json()["error"]["retryable"] is True
    assert int(refused.headers["retry-after"]) >= 1
    assert refused.headers["ratelimit-remaining"] == "0"
    assert int(refused.headers["ratelimit-reset"]) > 0
    # a key has its own, larger bucket
    keyed = await _status(http, shop, tx, headers=bearer(shop.live_key))
    assert keyed.status_code == 200 and keyed.headers["ratelimit-limit"] == "600"


async def test_checkout_and_public_info_limits(admin, http):
    shop = await manual_shop(admin)
    path = f"/api/checkout/manual/{shop.project_id}"
    codes = [(await http.post(path, json={"productId": "book"})).status_code for _ in range(31)]
    assert codes == [201] * 30 + [429]
    keyed = await http.post(path, json={"productId": "book"}, headers=bearer(shop.live_key))
    assert keyed.status_code == 201 and keyed.headers["ratelimit-limit"] == "600"
    info = await http.get(f"/api/projects/{shop.project_id}/public-info")
    assert info.headers["ratelimit-limit"] == "300"


@pytest.fixture
async def proxied_node(tmp_path) -> AsyncIterator[RunningNode]:
    settings = node_settings(tmp_path / "proxied", trusted_proxies=("127.0.0.1",))
    async with trio.open_nursery() as nursery:
        running: RunningNode = await nursery.start(partial(run_node, settings))
        yield running
        running.stop.set()


async def test_forwarded_for_counts_only_from_a_trusted_proxy(admin, http, proxied_node):
    # untrusted peer: a different spoofed header on every request does not reset the bucket
    shop = await manual_shop(admin)
    codes = [
        (await _status(http, shop, headers={"X-Forwarded-For": f"198.51.100.{n}"})).status_code
        for n in range(61)
    ]
    assert codes.count(429) == 1 and codes[-1] == 429
    # behind a trusted proxy each forwarded client has its own bucket
    proxy_admin = Admin(proxied_node.url, proxied_node.ctx.settings.admin_token)
    proxied_shop = await manual_shop(proxy_admin)
    async with httpx.AsyncClient(base_url=proxied_node.url) as proxied:
        for _ in range(60):
            assert (
                await _status(proxied, proxied_shop, headers={"X-Forwarded-For": "198.51.100.1"})
            ).status_code == 404
        assert (
            await _status(proxied, proxied_shop, headers={"X-Forwarded-For": "198.51.100.1"})
        ).status_code == 429
        assert (
            await _status(proxied, proxied_shop, headers={"X-Forwarded-For": "198.51.100.2"})
        ).status_code == 404
    await proxy_admin.aclose()


async def test_a_flood_on_one_project_does_not_stop_another(admin, http):
    flooded = await manual_shop(admin)
    other = await manual_shop(admin)
    other_tx = (
        await http.post(
            f"/api/checkout/manual/{other.project_id}",
            json={"productId": "book"},
            headers=bearer(other.live_key),
        )
    ).json()["txId"]
    flood_codes: list[int] = []
    other_codes: list[int] = []

    async def flood() -> None:
        for _ in range(100):
            flood_codes.append((await _status(http, flooded)).status_code)

    async def polite() -> None:
        for _ in range(40):
            other_codes.append(
                (await _status(http, other, other_tx, headers=bearer(other.live_key))).status_code
            )
            await trio.lowlevel.checkpoint()

    async with trio.open_nursery() as nursery:
        for _ in range(4):
            nursery.start_soon(flood)
        nursery.start_soon(polite)
    assert flood_codes.count(429) >= 300
    assert other_codes == [200] * 40


@pytest.fixture
async def small_quota_node(tmp_path) -> AsyncIterator[RunningNode]:
    settings = node_settings(
        tmp_path / "quota", tiers={"free": Tier("free", 3, 2), "pro": Tier("pro", 100, 100)}
    )
    async with trio.open_nursery() as nursery:
        running: RunningNode = await nursery.start(partial(run_node, settings))
        yield running
        running.stop.set()


async def test_over_quota_events_are_kept_and_live_checkouts_refused(small_quota_node):
    node = small_quota_node
    admin = Admin(node.url, node.ctx.settings.admin_token)
    shop = await manual_shop(admin)
    pid = shop.project_id
    await admin.provider(
        pid,
        "stripe",
        {"enabled": True, "live": stripe_credentials(mode="live", secret="whsec_live_quota")},
    )
    async with httpx.AsyncClient(base_url=node.url) as http:
        answers = []
        for n in range(5):
            body = event_body(
                f"evt_quota_{n}",
                "charge.refunded",
                {"id": f"ch_{n}", "object": "charge"},
                livemode=True,
            )
            response = await http.post(
                f"/webhook/stripe/{pid}", content=body, headers=signed(body, "whsec_live_quota")
            )
            assert response.status_code == 200, response.text  # never dropped, even over quota
            answers.append(response.json())
        assert all(a["received"] and not a["duplicate"] for a in answers)
        again = await http.post(
            f"/webhook/stripe/{pid}", content=body, headers=signed(body, "whsec_live_quota")
        )
        assert (
            again.json()["duplicate"] is True and again.json()["eventId"] == answers[-1]["eventId"]
        )
        usage = await admin.ok("GET", f"/api/manage/projects/{pid}/usage")
        assert usage["live"] == {
            "used": 5,
            "limit": 3,
            "left": 0,
            "overQuota": True,
        }  # the duplicate is not counted
        assert usage["test"]["used"] == 0 and usage["tier"] == "free"
        feed = (await http.get(f"/api/projects/{pid}/events", headers=bearer(shop.live_key))).json()
        assert len([e for e in feed["items"] if e["provider"] == "stripe"]) == 5
        refused = await http.post(f"/api/checkout/manual/{pid}", json={"productId": "book"})
        assert (refused.status_code, refused.json()["error"]["code"]) == (402, "quota_exceeded")
        test_mode = await http.post(
            f"/api/checkout/manual/{pid}", json={"productId": "book", "mode": "test"}
        )
        assert test_mode.status_code == 201
        await admin.ok("PATCH", f"/api/manage/projects/{pid}", {"tier": "pro"})
        assert (
            await http.post(f"/api/checkout/manual/{pid}", json={"productId": "book"})
        ).status_code == 201
    await admin.aclose()


async def test_idempotency_key_replays_the_first_answer(node, admin, http):
    shop = await manual_shop(admin)
    path = f"/api/checkout/manual/{shop.project_id}"
    headers = {"Idempotency-Key": "order-1001"}
    first = await http.post(
        path, json={"productId": "book", "metadata": {"customerRef": "u"}}, headers=headers
    )
    again = await http.post(
        path,
        content=b'{ "metadata": {"customerRef": "u"}, "productId": "book" }',
        headers={**headers, "content-type": "application/json"},
    )
    assert first.status_code == again.status_code == 201
    assert again.json() == first.json()
    assert again.headers["idempotent-replayed"] == "true"
    other = await http.post(path, json={"productId": "book", "quantity": 2}, headers=headers)
    assert (other.status_code, other.json()["error"]["code"]) == (409, "idempotency_conflict")
    listed = (
        await http.get(
            f"/api/projects/{shop.project_id}/transactions", headers=bearer(shop.live_key)
        )
    ).json()
    assert len(listed["items"]) == 1
    # a request refused by validation is not remembered: fixed, it goes through with the same key
    bad = await http.post(path, json={"productId": "nope"}, headers={"Idempotency-Key": "k2"})
    assert bad.status_code == 404
    assert (
        await http.post(path, json={"productId": "book"}, headers={"Idempotency-Key": "k2"})
    ).status_code == 201
    too_long = await http.post(
        path, json={"productId": "book"}, headers={"Idempotency-Key": "x" * 256}
    )
    assert too_long.status_code == 400
    # keys expire after 24 hours (test clock)
    real = node.ctx.clock_ms
    node.ctx.clock_ms = lambda: real() + 25 * 3600 * 1000
    try:
        fresh = await http.post(
            path, json={"productId": "book", "metadata": {"customerRef": "u"}}, headers=headers
        )
        assert fresh.status_code == 201 and fresh.json()["txId"] != first.json()["txId"]
    finally:
        node.ctx.clock_ms = real


async def test_concurrent_requests_with_one_key_create_one_transaction(admin, http):
    shop = await manual_shop(admin)
    answers = []

    async def post() -> None:
        response = await http.post(
            f"/api/checkout/manual/{shop.project_id}",
            json={"productId": "book"},
            headers={"Idempotency-Key": "same"},
        )
        answers.append((response.status_code, response.json()["txId"]))

    async with trio.open_nursery() as nursery:
        for _ in range(5):
            nursery.start_soon(post)
    assert len({tx for _, tx in answers}) == 1 and {code for code, _ in answers} == {201}
    listed = (
        await http.get(
            f"/api/projects/{shop.project_id}/transactions", headers=bearer(shop.live_key)
        )
    ).json()
    assert len(listed["items"]) == 1


async def test_long_poll_answers_on_change_or_timeout_and_counts_once(admin, http):
    shop = await manual_shop(admin)
    pid = shop.project_id
    tx = (await http.post(f"/api/checkout/manual/{pid}", json={"productId": "book"})).json()["txId"]
    # already past the version: at once
    with trio.fail_after(bound(2)):
        now = await http.get(f"/status/{pid}/{tx}", params={"wait": 30, "version": 0})
    assert now.json()["version"] == 1
    # nothing changes: the unchanged record after the wait
    start = trio.current_time()
    unchanged = await http.get(f"/status/{pid}/{tx}", params={"wait": 1, "version": 1})
    assert unchanged.json()["version"] == 1 and trio.current_time() - start >= 0.9
    results = {}

    async def poll() -> None:
        response = await http.get(f"/status/{pid}/{tx}", params={"wait": 20, "version": 1})
        results["poll"] = (
            response.json(),
            response.headers["ratelimit-remaining"],
            trio.current_time(),
        )

    async with trio.open_nursery() as nursery:
        nursery.start_soon(poll)
        await trio.sleep(0.3)  # the subject: a change that comes while the poll waits
        marked_at = trio.current_time()
        await http.post(
            f"/api/projects/{pid}/transactions/{tx}/mark-paid", headers=bearer(shop.live_key)
        )
    record, remaining, answered_at = results["poll"]
    assert (record["status"], record["version"]) == ("succeeded", 2)
    assert answered_at - marked_at < 5  # woken by the change, not by the 20 s timer
    # three polls so far, each counted once; about a second of refill came back meanwhile
    assert 60 - 3 <= int(remaining) <= 60 - 3 + 1
    bad = await http.get(f"/status/{pid}/{tx}", params={"wait": 31, "version": 1})
    assert (bad.status_code, bad.json()["error"]["field"]) == (400, "wait")


async def test_public_info_cache_changes_at_once_and_etags(admin, http):
    shop = await manual_shop(admin)
    path = f"/api/projects/{shop.project_id}/public-info"
    first = await http.get(path)
    assert (
        await http.get(path, headers={"If-None-Match": first.headers["etag"]})
    ).status_code == 304
    await admin.provider(shop.project_id, "manual", {"enabled": True, "label": "Cheque"})
    second = await http.get(path, headers={"If-None-Match": first.headers["etag"]})
    assert second.status_code == 200 and second.json()["providers"][0]["label"] == "Cheque"
    assert second.headers["etag"] != first.headers["etag"]
    assert second.headers["x-content-type-options"] == "nosniff"


async def test_management_is_limited_per_token(tmp_path):
    settings = node_settings(
        tmp_path / "m",
        rate_limits={**node_settings(tmp_path / "x").rate_limits, "manage": Limit(5, 60)},
    )
    async with trio.open_nursery() as nursery:
        running: RunningNode = await nursery.start(partial(run_node, settings))
        admin = Admin(running.url, settings.admin_token)
        answers = [await admin.http.get("/api/manage/stats") for _ in range(6)]
        assert [answer.status_code for answer in answers] == [200] * 5 + [429]
        # every limited answer says where its bucket stands (CONTRACT 8), not only the 429
        assert [answer.headers["ratelimit-remaining"] for answer in answers] == [
            "4",
            "3",
            "2",
            "1",
            "0",
            "0",
        ]
        assert {answer.headers["ratelimit-limit"] for answer in answers} == {"5"}
        await admin.aclose()
        running.stop.set()


async def test_counted_error_answers_carry_rate_limit_headers(admin, http):
    shop = await manual_shop(admin)
    missing = await _status(http, shop)  # an existing project, an unknown transaction
    assert missing.status_code == 404 and missing.headers["ratelimit-limit"] == "60"
    bad_product = await http.post(
        f"/api/checkout/manual/{shop.project_id}", json={"productId": "nope"}
    )
    assert bad_product.status_code == 404 and bad_product.headers["ratelimit-limit"] == "30"


async def test_non_ascii_digits_are_a_400_not_a_500(admin, http):
    shop = await manual_shop(admin)
    response = await _status(http, shop, params={"wait": "²", "version": "1"})
    assert (response.status_code, response.json()["error"]["field"]) == (400, "wait")
    listed = await http.get(
        f"/api/projects/{shop.project_id}/transactions",
        params={"limit": "²"},
        headers=bearer(shop.live_key),
    )
    assert listed.status_code == 400


async def test_long_polls_fail_like_plain_polls(admin, http):
    shop = await manual_shop(admin)
    poll = {"wait": 2, "version": 1}
    unknown = await _status(http, shop, params=poll)
    assert (unknown.status_code, unknown.json()["error"]["code"]) == (404, "not_found")
    foreign = await http.get(f"/status/prj_0000000000000000/{MISSING_TX}", params=poll)
    assert foreign.status_code == 404 and foreign.json() == unknown.json()
    for _ in range(60):
        await _status(http, shop)
    limited = await _status(http, shop, params=poll)
    assert limited.status_code == 429 and int(limited.headers["retry-after"]) >= 1
    assert limited.headers["ratelimit-limit"] == "60"
