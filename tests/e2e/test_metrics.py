"""``GET /metrics`` (CONTRACT 4.9): Prometheus text that prometheus-client's own parser reads,
for the operator only, and figures that move as requests, webhooks and commits happen."""

from __future__ import annotations

from functools import partial

import httpx
import trio
from prometheus_client.parser import text_string_to_metric_families
from support.client import manual_shop
from support.nodes import node_settings
from support.stripe_events import event_body, signed, stripe_credentials

from edge.node import RunningNode, run_node


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def value(found: dict, name: str, **labels: str) -> float:  # type: ignore[type-arg]
    return found.get((name, tuple(sorted(labels.items()))), 0.0)


async def test_metrics_parse_and_move_with_requests_webhooks_and_commits(admin, http, node):
    shop = await manual_shop(admin)
    pid = shop.project_id
    await admin.provider(pid, "stripe", {"enabled": True, "test": stripe_credentials()})
    token = {"Authorization": f"Bearer {node.ctx.settings.admin_token}"}
    before = samples((await http.get("/metrics", headers=token)).text)

    await http.post(f"/api/checkout/manual/{pid}", json={"productId": "book"})
    body = event_body("evt_metrics_1", "charge.refunded", {"id": "ch_1"})
    await http.post(f"/webhook/stripe/{pid}", content=body, headers=signed(body))
    await http.post(f"/webhook/stripe/{pid}", content=body, headers=signed(body))
    await http.post(f"/webhook/stripe/{pid}", content=body, headers=signed(body, "whsec_wrong"))
    await trio.sleep(0.3)  # the loop's lag is ticked while a client is connected (this one)
    answer = await http.get("/metrics", headers=token)
    assert answer.headers["content-type"].startswith("text/plain; version=0.0.4")
    after = samples(answer.text)

    moved = lambda name, **labels: value(after, name, **labels) - value(before, name, **labels)  # noqa: E731
    assert moved("edge_requests_total", route="/api/checkout/manual/{id}", status="201") == 1
    assert moved("edge_requests_total", route="/webhook/stripe/{id}", status="200") == 2
    assert moved("edge_requests_total", route="/webhook/stripe/{id}", status="401") == 1
    assert moved("edge_request_seconds_count", route="/webhook/stripe/{id}") == 3
    # a charge the node never linked to a checkout: stored, and counted as unmatched
    assert moved("edge_webhooks_total", provider="stripe", outcome="unmatched") == 1
    assert moved("edge_webhooks_total", provider="stripe", outcome="duplicate") == 1
    assert moved("edge_webhooks_total", provider="stripe", outcome="no_matching_signature") == 1
    assert moved("edge_commits_total") >= 2 and value(after, "edge_actors") >= 1
    assert value(after, "edge_notifications_pending") == 0
    # the loop's lag, ticked every 0.1 s while the node runs
    assert value(after, "edge_loop_lag_seconds_count") >= 1


async def test_metrics_are_for_the_operator(admin, http):
    assert (await http.get("/metrics")).status_code == 401
    shop = await manual_shop(admin)
    key = {"Authorization": f"Bearer {shop.live_key}"}
    refused = await http.get("/metrics", headers=key)
    assert (refused.status_code, refused.json()["error"]["code"]) == (401, "unauthorized")


async def test_an_allowed_address_reads_metrics_without_the_token(tmp_path):
    settings = node_settings(tmp_path / "data", metrics_allow=("127.0.0.0/8",))
    async with trio.open_nursery() as nursery:
        running: RunningNode = await nursery.start(partial(run_node, settings))
        async with httpx.AsyncClient(base_url=running.url) as http:
            answer = await http.get("/metrics")
        running.stop.set()
    assert answer.status_code == 200 and "edge_requests_total" in answer.text
