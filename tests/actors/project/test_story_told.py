"""Every status a transaction's record takes is told by an event (a repeat is told to no one,
so a repeat never moves the record by itself), on the real actor and store."""

from __future__ import annotations

import pytest
from actors.project.harness import ECHO, EchoProvider, delivery, open_harness
from actors.project.test_intake import _echo_owned_tx

from edge.providers.registry import PROVIDERS
from edge.store import keys


@pytest.fixture
async def harness(tmp_path):
    async with open_harness(tmp_path) as opened:
        yield opened


async def test_every_status_the_record_takes_is_told(harness, monkeypatch):
    monkeypatch.setitem(PROVIDERS, "echo", ECHO)
    monkeypatch.setattr(EchoProvider, "gate", None)
    monkeypatch.setattr(EchoProvider, "checkout_gate", None)
    project_id, ledger, tx = await _echo_owned_tx(harness)
    ref = [tx["providerRef"]]
    amount = tx["amount"]
    steps = [
        dict(id="paid", status="succeeded", type="payment.succeeded", at=1_000),
        dict(id="ref", status="partially_refunded", type="payment.partially_refunded",
             at=3_000, refund=300, refundOf="re_1"),
        # Stripe: a dispute's event stamped when made (later than the dispute's opening)...
        dict(id="dp_hook", status="disputed", type="payment.disputed", at=4_000, change="dp_1"),
        dict(id="dp_won", status="succeeded", type="payment.dispute_closed", at=5_000,
             change="dp_1"),
        # ...and asking, which dates it at its opening, before the refund
        dict(id="dp_read", status="disputed", type="payment.disputed", at=2_000, change="dp_1"),
    ]  # fmt: skip
    told = []
    for step in steps:
        await harness.call(project_id, delivery(refs=ref, amount=amount, currency="EUR", **step))
        record = await harness.ctx.store.get(keys.record(project_id, keys.TRANSACTION, tx["id"]))
        told.append((step["id"], record["status"], record["version"]))
    prefix = keys.history(project_id, tx["id"])
    events = [
        await ledger.stored_event(k[len(prefix) :].decode())
        for (k, _) in await harness.ctx.store.scan(prefix, limit=100)
    ]
    notified = {(e["status"], e["version"]) for e in events if not e.get("duplicateOf")}
    final = (record["status"], record["version"])
    assert final in notified, f"the record is {final}, never told: {told}"
