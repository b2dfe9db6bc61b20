"""Asking the provider (CONTRACT 4.3a), through the node's own API and command line: ``POST
.../transactions/{txId}/sync``, ``POST .../reconcile``, ``edge tx sync`` and ``edge reconcile``,
against the Stripe simulator with its webhooks held back (a wrong address, a node down: they
never came). Every provider's sync is tests/contract (the held-back webhooks); the adapters'
reads are tests/providers/test_*_sync.py."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from typing import Any

import httpx
import pytest
import trio
from support.client import bearer, manual_shop, post_checkout
from support.stripe_shop import stripe_shop
from support.waits import bound, until

import edge.actors.context as context
from edge.domain.timefmt import iso_ms
from edge.sim.stripe import StripeSimulator


async def _paid_unheard(http: httpx.AsyncClient, admin: Any, sim: StripeSimulator) -> tuple:
    """A Stripe checkout paid, and 3.00 of it refunded in Stripe's dashboard, none of whose
    webhooks reached the node."""
    shop = await stripe_shop(admin, sim)
    await admin.product(shop.project_id, "ten", name="Ten", amount=10, currency="EUR")
    sim.webhook_faults.hold()
    made = await post_checkout(http, "stripe", shop, "ten", mode="test")
    assert made.status_code == 201, made.text
    tx = made.json()["txId"]
    session_id = made.json()["url"].rsplit("/", 1)[-1]
    await sim.complete(session_id)
    await sim.refund(session_id, 300)
    return shop, tx, session_id


async def _record(http: httpx.AsyncClient, shop: Any, tx: str) -> dict[str, Any]:
    answer = await http.get(
        f"/api/projects/{shop.project_id}/transactions/{tx}", headers=bearer(shop.test_key)
    )
    return dict(answer.json())


async def test_sync_learns_what_no_webhook_brought_and_the_late_webhooks_add_nothing(
    node, admin, http, sim
):
    shop, tx, _ = await _paid_unheard(http, admin, sim)
    assert (await _record(http, shop, tx))["status"] == "pending"
    synced = await http.post(
        f"/api/projects/{shop.project_id}/transactions/{tx}/sync", headers=bearer(shop.test_key)
    )
    assert synced.status_code == 200, synced.text
    view = synced.json()
    assert view["status"] == "partially_refunded"
    assert view["sync"] == {"found": True, "learned": 2}
    assert (view["refunded"], view["refundable"]) == (3.0, 7.0)
    learned = [e for e in view["events"] if e["source"] == "sync"]
    assert [e["type"] for e in learned] == ["payment.succeeded", "payment.partially_refunded"]
    assert view["asked"]["learned"] == 2 and view["asked"]["webhookArrived"] is False
    # asking again learns nothing and stores nothing
    again = await http.post(
        f"/api/projects/{shop.project_id}/transactions/{tx}/sync", headers=bearer(shop.test_key)
    )
    assert again.json()["sync"] == {"found": True, "learned": 0}
    assert len(again.json()["events"]) == len(view["events"])
    # the webhooks come at last: each is a duplicate of a change the node had
    await sim.release()
    after = await _record(http, shop, tx)
    assert (after["status"], after["version"]) == (view["status"], view["version"])
    late = [e for e in after["events"] if e["source"] == "webhook"]
    assert late and all(e.get("duplicateOf") for e in late), late
    assert after["asked"]["webhookArrived"] is True
    metrics = await http.get("/metrics", headers=bearer(node.ctx.settings.admin_token))
    assert 'edge_events_learned_total{provider="stripe",source="sync"} 2.0' in metrics.text


async def test_reconcile_walks_stripes_events_since_a_time(node, admin, http, sim):
    shop, tx, _ = await _paid_unheard(http, admin, sim)
    since = iso_ms(node.ctx.clock_ms() - 3_600_000)
    walked = await http.post(
        f"/api/projects/{shop.project_id}/reconcile",
        json={"since": since},
        headers=bearer(shop.test_key),
    )
    assert walked.status_code == 200, walked.text
    (stripe,) = walked.json()["providers"]
    assert (stripe["provider"], stripe["mode"]) == ("stripe", "test")
    assert stripe["learned"] >= 2 and stripe["seen"] >= stripe["learned"]
    assert (await _record(http, shop, tx))["status"] == "partially_refunded"
    again = await http.post(
        f"/api/projects/{shop.project_id}/reconcile",
        json={"since": since},
        headers=bearer(shop.test_key),
    )
    assert again.json()["providers"][0]["learned"] == 0  # what the node has is a duplicate


async def test_what_cannot_be_asked_is_said(admin, http):
    shop = await manual_shop(admin)
    made = await post_checkout(http, "manual", shop, "book", mode="test")
    tx = made.json()["txId"]
    sync = await http.post(
        f"/api/projects/{shop.project_id}/transactions/{tx}/sync", headers=bearer(shop.test_key)
    )
    assert (sync.status_code, sync.json()["error"]["code"]) == (409, "sync_unsupported")
    reconcile = f"/api/projects/{shop.project_id}/reconcile"
    manual = await http.post(
        reconcile, json={"since": "2026-11-01T00:00:00Z", "provider": "manual"},
        headers=bearer(shop.test_key),
    )  # fmt: skip
    assert (manual.status_code, manual.json()["error"]["code"]) == (409, "reconcile_unsupported")
    bad = await http.post(reconcile, json={"since": "yesterday"}, headers=bearer(shop.test_key))
    assert (bad.status_code, bad.json()["error"]["field"]) == (400, "since")
    other_mode = await http.post(
        reconcile,
        json={"since": "2026-11-01T00:00:00Z", "mode": "live"},
        headers=bearer(shop.test_key),
    )
    assert other_mode.status_code == 400
    nothing = await http.post(
        reconcile, json={"since": "2026-11-01T00:00:00Z"}, headers=bearer(shop.test_key)
    )
    assert nothing.json()["providers"] == []  # pay by mail keeps no list


def _edge(node: Any, *args: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "edge", *args, "--url", node.url, "--json"],
        capture_output=True,
        text=True,
        timeout=bound(60),
        env={"EDGE_ADMIN_TOKEN": node.ctx.settings.admin_token, "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


async def test_edge_tx_sync_and_edge_reconcile(node, admin, http, sim):
    shop, tx, _ = await _paid_unheard(http, admin, sim)
    synced = await trio.to_thread.run_sync(_edge, node, "tx", "sync", shop.project_id, tx)
    assert synced["status"] == "partially_refunded" and synced["sync"]["learned"] == 2
    since = iso_ms(node.ctx.clock_ms() - 3_600_000)
    walked = await trio.to_thread.run_sync(
        _edge, node, "reconcile", "--project", shop.project_id, "--since", since, "--mode", "test"
    )
    assert walked["providers"][0]["provider"] == "stripe"
    resolved = await trio.to_thread.run_sync(
        _edge, node, "tx", "refund", shop.project_id, tx, "--amount", "7", "--reason", "all"
    )
    assert (resolved["amount"], resolved["state"]) == (7.0, "requested")


class _ShiftedTime:
    """``time`` for the node's wall clock (``edge.actors.context``), ``offset_s`` ahead."""

    offset_s = 0.0

    def time_ns(self) -> int:
        return time.time_ns() + int(self.offset_s * 1e9)

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)


@pytest.mark.node_settings(sync_every_s=1)
async def test_a_late_first_look_still_learns_a_payment_whose_webhook_was_lost(
    node, admin, http, sim, monkeypatch
):
    """The node was down (or its queue behind) for minutes after a Stripe checkout was made,
    the buyer paid meanwhile and the webhook was lost: its first look walks the account's
    events from the checkout's creation, and learns the payment then, not at the session's
    expiry a day later."""
    shifted = _ShiftedTime()
    monkeypatch.setattr(context, "time", shifted)
    shop = await stripe_shop(admin, sim)
    sim.webhook_faults.drop()
    made = await post_checkout(http, "stripe", shop, "book", mode="test")
    assert made.status_code == 201, made.text
    tx_id = made.json()["txId"]
    await sim.complete(made.json()["url"].rsplit("/", 1)[-1])
    shifted.offset_s = 600  # ten minutes pass before the owed look runs
    node.ctx.follow_ups_owed()

    async def status() -> str:
        answer = await http.get(
            f"/api/projects/{shop.project_id}/transactions/{tx_id}", headers=bearer(shop.test_key)
        )
        return str(answer.json()["status"])

    async def learned() -> bool:
        return await status() == "succeeded"

    await until(learned, what="the payment learned by the late first look")


@pytest.mark.node_settings(sync_every_s=1)
async def test_a_payment_is_asked_about_directly_when_the_accounts_events_may_not_be_read(
    node, admin, http, sim
):
    """A restricted Stripe key that may read sessions but not the account's events: the walk
    of the events that looks after open checkouts is refused for good, so the checkout whose
    webhook was lost is asked about itself, and its payment learned, not a day later at the
    session's end."""
    shop = await stripe_shop(admin, sim)
    sim.webhook_faults.drop()
    sim.unpermitted.add("/v1/events")
    made = await post_checkout(http, "stripe", shop, "book", mode="test")
    assert made.status_code == 201, made.text
    tx_id = made.json()["txId"]
    await sim.complete(made.json()["url"].rsplit("/", 1)[-1])

    async def learned() -> bool:
        answer = await http.get(
            f"/api/projects/{shop.project_id}/transactions/{tx_id}", headers=bearer(shop.test_key)
        )
        return bool(answer.json()["status"] == "succeeded")

    await until(learned, what="the payment learned by asking about it directly", timeout_s=20)


@pytest.mark.parametrize("first", ["webhook", "asking"])
async def test_a_payment_of_another_amount_is_one_flag_however_it_was_learned(
    node, admin, http, sim, first
):
    """Stripe took 5.00 for a 10.00 checkout: one amount_mismatch, whether its webhook or the
    node's asking came first, and the other repeats it (the same flag, not a second)."""
    shop = await stripe_shop(admin, sim)
    await admin.product(shop.project_id, "ten", name="Ten", amount=10, currency="EUR")
    if first == "asking":
        sim.webhook_faults.hold()
    made = await post_checkout(http, "stripe", shop, "ten", mode="test")
    tx, session_id = made.json()["txId"], made.json()["url"].rsplit("/", 1)[-1]
    sim.session(session_id)["amount_total"] = 500
    await sim.complete(session_id)
    if first == "webhook":

        async def flagged() -> bool:
            return bool((await _record(http, shop, tx))["needsAttention"])

        await until(flagged, what="the webhook's mismatch flagged")
    synced = await http.post(
        f"/api/projects/{shop.project_id}/transactions/{tx}/sync", headers=bearer(shop.test_key)
    )
    assert synced.status_code == 200, synced.text
    if first == "asking":
        sim.webhook_faults.clear()
        await sim.release()
    record = await _record(http, shop, tx)
    assert [f["code"] for f in record["attention"]] == ["amount_mismatch"], record["attention"]
    (told,) = [
        e
        for e in record["events"]
        if e["type"] == "payment.amount_mismatch" and not e.get("duplicateOf")
    ]
    assert record["attention"][0]["eventId"] == told["id"]  # the flag names the change's event


@pytest.mark.parametrize("asked", [False, True])
async def test_a_renewal_failed_then_paid_is_told_alike_whether_asked_or_not(
    node, admin, http, sim, asked
):
    """A renewal fails (the subscription past_due), then is paid (active again). Asked about
    while the webhooks were held, the node tells what the webhooks alone tell: the late
    past_due webhook is its own change at the version it made, not a repeat of the status
    the subscription has now, and the active one is not its repeat either."""
    shop = await stripe_shop(admin, sim)
    await admin.product(
        shop.project_id, "pro", name="Pro", kind="subscription", amount=9, currency="EUR",
        interval="month",
    )  # fmt: skip
    made = await post_checkout(http, "stripe", shop, "pro", mode="test")
    assert made.status_code == 201, made.text
    tx, session_id = made.json()["txId"], made.json()["url"].rsplit("/", 1)[-1]
    await sim.complete(session_id)

    async def started() -> bool:
        return (await _record(http, shop, tx))["status"] == "succeeded"

    await until(started, what="the subscription started")
    subscription = sim.session(session_id)["subscription"]
    if asked:
        sim.webhook_faults.hold()
    await sim.fail_invoice(subscription)
    await trio.sleep(1.1)  # Stripe stamps in whole seconds: the payment comes a second later
    await sim.pay_invoice(subscription)
    if asked:
        synced = await http.post(
            f"/api/projects/{shop.project_id}/transactions/{tx}/sync",
            headers=bearer(shop.test_key),
        )
        assert synced.status_code == 200, synced.text
        sim.webhook_faults.clear()
        await sim.release()

    record = await _record(http, shop, tx)  # the simulator's deliveries were all answered
    told = [e["type"] for e in record["events"] if not e.get("duplicateOf")]
    assert sorted(t for t in told if t.startswith("subscription.")) == [
        "subscription.created",
        "subscription.past_due",
        "subscription.payment_failed",
        "subscription.payment_succeeded",
        "subscription.payment_succeeded",
        "subscription.updated",
    ]
