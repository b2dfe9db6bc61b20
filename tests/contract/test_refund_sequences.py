"""Refunds under any sequence of lost answers, crashes, late webhooks and dashboard refunds, for
every provider (CONTRACT 4.3a, issue 32): a property test.

Each example is a paid 10.00 EUR checkout, a random sequence of steps, then quiet: the held
webhooks come late, the provider approves what it reviews, and the node asks the provider once
more. Steps:

- the merchant asks the node for a refund (of an amount, or all that is left);
- a refund made in the provider's own dashboard;
- the provider acts on the next refund call and its answer is lost (late, dropped, 5xx);
- the node crashes (its tasks cancelled mid-call, nothing drained) and starts again on its data;
- the provider's webhooks are held back from now on (sent, late, at the end).

Whatever the sequence: the money the provider gave back is never more than was paid; each of
the node's refunds was made at most once at the provider; the node's figures agree with the
provider's; the status says what the sums say; and the merchant's endpoint heard of each
event once and of no repeat of a change.
"""

from __future__ import annotations

import contextlib
import json
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio
from contract.drivers import PRICE_MINOR, Driver, driven, driver_kind
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st
from support.asgi import serve_asgi
from support.client import Admin, bearer
from support.merchant import Merchant, add_endpoint
from support.nodes import node_settings
from support.waits import bound

from edge.node import RunningNode, run_node
from edge.sim.faults import LOSSES
from edge.store import outbox

step = st.one_of(
    st.tuples(st.just("ask"), st.sampled_from([None, 100, 250, 400, 1000])),
    st.tuples(st.just("dashboard"), st.sampled_from([150, 300, 700])),
    st.tuples(st.just("lose"), st.sampled_from(LOSSES)),
    st.tuples(st.just("crash"), st.none()),
    st.tuples(st.just("hold"), st.none()),
)


class Node:
    """A node on one data dir and one port, crashed and started again at will."""

    def __init__(self, data: Path) -> None:
        self.data = data
        self.port = 0
        self.running: RunningNode | None = None
        self._scope: trio.CancelScope | None = None
        self._done = trio.Event()

    async def start(self, nursery: trio.Nursery) -> RunningNode:
        self._done = trio.Event()
        settings = node_settings(self.data, port=self.port, provider_timeout_s=1.0)
        self.running = await nursery.start(self._run, settings)
        self.port = int(self.running.url.rsplit(":", 1)[1])
        return self.running

    async def _run(self, settings: Any, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        with trio.CancelScope() as self._scope:
            await run_node(settings, task_status=task_status)
        self._done.set()

    async def crash(self) -> None:
        """Cancel everything the node is doing, at once (no drain), and wait for it to go."""
        assert self._scope is not None
        self._scope.cancel()
        await self._done.wait()


@asynccontextmanager
async def clients(url: str, token: str) -> AsyncIterator[tuple[Admin, httpx.AsyncClient]]:
    admin = Admin(url, token)
    async with httpx.AsyncClient(base_url=url, timeout=bound(30.0)) as http:
        try:
            yield admin, http
        finally:
            await admin.aclose()


async def _quiet(driver: Driver, made: Any) -> None:
    """Until no refund of the checkout is owed to its provider any more, the provider
    approving what it reviews meanwhile (a refund waits while another is under review)."""
    with trio.fail_after(bound(120)):
        while True:
            await driver.refund_approved(made)
            owed = await outbox.due(driver.node.ctx.store, 2**62, 500)
            if not any(e["txId"] == made.tx and e["action"] == "refund" for e in owed):
                return
            await trio.sleep(0.2)


async def _play(provider: str, steps: list[tuple[str, Any]], data: Path) -> None:
    kind = driver_kind(provider)
    sim = kind.simulator()
    merchant = Merchant()
    node = Node(data)
    async with sim.serving(), trio.open_nursery() as nursery:
        hooks = await nursery.start(serve_asgi, merchant)
        running = await node.start(nursery)
        token = running.ctx.settings.admin_token
        async with clients(running.url, token) as (admin, http):
            driver = kind(sim, admin, http, running)
            await driver.setup()
            await add_endpoint(
                admin,
                driver.project_id,
                url=hooks.replace("127.0.0.1", "localhost") + "/hooks",
                mode="test",
            )
            made = await driver.checkout()
            await driver.pay(made)
        held = False
        asked = by_hand = 0  # minor units asked through the node, and given back by hand
        for what, arg in steps:
            async with clients(node.running.url, token) as (admin, http):  # type: ignore[union-attr]
                driver.admin, driver.http, driver.node = admin, http, node.running  # type: ignore[assignment]
                if what == "ask":
                    body = {} if arg is None else {"amount": arg / 100}
                    answer = await http.post(
                        f"/api/projects/{driver.project_id}/transactions/{made.tx}/refund",
                        json=body,
                        headers=bearer(driver.test_key),
                    )
                    assert answer.status_code in (202, 409, 422), answer.text
                    if answer.status_code == 202:
                        asked += round(answer.json()["amount"] * 100)
                elif what == "dashboard" and by_hand + asked + arg <= PRICE_MINOR:
                    # by hand in the provider's own dashboard, never more than the merchant knows
                    # is left (BTCPay caps nothing: a merchant may give away more than was paid)
                    with contextlib.suppress(Exception):  # refused: another awaits review
                        await driver.refund(made, arg)
                        by_hand += arg
                elif what == "lose":
                    sim.faults.lose("POST", driver.refund_call, arg)
                elif what == "crash":
                    await node.crash()
                    await node.start(nursery)
                elif what == "hold" and not held:
                    sim.webhook_faults.hold()
                    held = True
        # quiet: every answer is heard, held webhooks come late, reviews are approved
        sim.faults.clear()
        async with clients(node.running.url, token) as (admin, http):  # type: ignore[union-attr]
            driver.admin, driver.http, driver.node = admin, http, node.running  # type: ignore[assignment]
            await _quiet(driver, made)
            sim.webhook_faults.clear()
            await driver.release_webhooks()
            await driver.refund_approved(made)
            synced = await http.post(
                f"/api/projects/{driver.project_id}/transactions/{made.tx}/sync",
                headers=bearer(driver.test_key),
            )
            assert synced.status_code == 200, synced.text
            record = synced.json()
            _check(driver, made, record, merchant, ("crash", None) in steps)
        nursery.cancel_scope.cancel()


def _check(
    driver: Driver, made: Any, record: dict[str, Any], merchant: Merchant, crashed: bool
) -> None:
    given_back = round(record["refunded"] * 100)
    assert given_back <= PRICE_MINOR, record
    # each of the node's refunds made at most once at the provider
    made_at_provider = [r["refundId"] for r in record["providerRefunds"] if r["refundId"]]
    assert len(made_at_provider) == len(set(made_at_provider)), record["providerRefunds"]
    assert driver.refunds_made(made) == len(record["providerRefunds"]), record
    for refund in record["refunds"]:
        assert refund["state"] in ("sent", "succeeded", "failed"), refund
    # the status says what the sums say
    if given_back >= PRICE_MINOR:
        assert record["status"] == "refunded", record
    elif given_back > 0:
        assert record["status"] == "partially_refunded", record
    # the merchant heard of no repeat of a change; an event twice (under the one webhook-id)
    # only where the node crashed between the merchant's answer and its record of it
    heard = [json.loads(body) for _, body in merchant.got if _whole(body)]
    assert not [e for e in heard if e.get("duplicateOf")]
    ids = [event["id"] for event in heard]
    assert crashed or len(ids) == len(set(ids)), ids


def _whole(body: bytes) -> bool:
    """A request the merchant got in full (a crash cancels a send half-way)."""
    try:
        json.loads(body)
    except ValueError:
        return False
    return True


@pytest.mark.parametrize("provider", driven())
@settings(
    max_examples=6,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(steps=st.lists(step, min_size=1, max_size=6))
def test_any_sequence_refunds_at_most_what_was_paid_once_each(
    provider: str, steps: list[tuple[str, Any]]
) -> None:
    note(f"steps: {steps}")
    with tempfile.TemporaryDirectory() as path:
        trio.run(partial(_play, provider, steps, Path(path) / "data"))
