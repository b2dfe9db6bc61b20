"""The ledger on a real store: commits before answers, read-your-writes, stale and reload."""

from __future__ import annotations

from typing import Any

import lmdb
import pytest

from edge.actors import messages as m
from edge.domain.status import Status
from edge.errors import Unavailable
from edge.store import keys
from edge.store.codec import pack


async def _pending_tx(harness: Any) -> tuple[str, str]:
    project_id = await harness.project("manual")
    answer = await harness.call(project_id, m.StartCheckout("manual", "book", {}, 1, "test"))
    return project_id, answer["txId"]


def _succeed(tx: dict[str, Any]) -> None:
    """A change in memory, as a concern makes it before committing."""
    tx.update(status=str(Status.SUCCEEDED), version=tx["version"] + 1)


async def test_a_commit_answers_only_once_durable_with_the_answer_as_it_was(harness):
    project_id, tx_id = await _pending_tx(harness)
    ledger = harness.ledger(project_id)
    tx = await ledger.tx(tx_id)
    _succeed(tx)
    answers: list[Any] = []
    ticket = ledger.commit(ledger.tx_ops(tx), answers.append, {"status": tx["status"]})
    tx["status"] = "changed later, in memory only"
    assert answers == []  # no checkpoint since the submit: the writer has not run
    await ticket.wait()
    assert answers == [{"status": "succeeded"}]
    stored = await harness.ctx.store.get(keys.record(project_id, keys.TRANSACTION, tx_id))
    assert (stored["status"], stored["version"]) == ("succeeded", 2)


async def test_a_read_waits_for_the_commit_of_that_record_only(harness):
    project_id, tx_id = await _pending_tx(harness)
    ledger = harness.ledger(project_id)
    tx = await ledger.tx(tx_id)
    _succeed(tx)
    ticket = ledger.submit(ledger.tx_ops(tx))
    of_tx: list[Any] = []
    of_other: list[Any] = []
    ledger.reply_read(of_tx.append, "tx", tx_id)
    ledger.reply_read(of_other.append, "other", "tx_00000000000000000000000000")
    assert (of_tx, of_other) == ([], ["other"])
    await ticket.wait()
    assert of_tx == ["tx"]


async def test_index_entries_are_read_back_before_their_commit(harness):
    project_id = await harness.project()
    ledger = harness.ledger(project_id)
    op = ledger.index_op(keys.PROVIDER_REF, "stripe", "pi_1", "tx_x")
    assert await ledger.lookup(keys.PROVIDER_REF, "stripe", "pi_1") == "tx_x"
    assert await harness.ctx.store.get_raw(op[1]) is None
    await ledger.submit([op]).wait()
    await ledger.reload()  # memory dropped: the store answers now
    assert await ledger.lookup(keys.PROVIDER_REF, "stripe", "pi_1") == "tx_x"


async def test_a_failed_commit_answers_unavailable_and_the_reload_forgets_memory(harness):
    project_id, tx_id = await _pending_tx(harness)
    ledger = harness.ledger(project_id)
    tx = await ledger.tx(tx_id)
    _succeed(tx)
    answers: list[Any] = []
    refused = ("records", b"", pack({}))  # LMDB refuses an empty key: the commit fails
    ticket = ledger.commit([*ledger.tx_ops(tx), refused], answers.append, "ok")
    with pytest.raises(lmdb.Error):
        await ticket.wait()
    assert isinstance(answers[0], Unavailable)
    assert ledger.stale
    # the next message reloads first: the transaction is pending again, as stored
    status = await harness.call(project_id, m.GetStatus(tx_id))
    assert b'"status":"pending"' in status
    assert not ledger.stale


async def test_configuration_changes_drop_what_was_derived(harness):
    project_id = await harness.project("manual")
    ledger = harness.ledger(project_id)
    provider, opened = ledger.configured("manual", "test")
    version = ledger.config_version
    ledger.project["providers"]["manual"]["test"] = {}
    await ledger.submit(ledger.config_changed()).wait()
    assert ledger.config_version == version + 1
    assert ledger.credentials(provider, "test") != opened


async def test_follow_up_target_is_a_copy_of_the_transaction(harness):
    project_id, tx_id = await _pending_tx(harness)
    ledger = harness.ledger(project_id)
    target = await ledger.follow_up_target(tx_id, "test")
    assert target is not None and target["tx"]["status"] == "pending"
    assert target["credentials"] == ledger.configured("manual", "test")[1]
    target["tx"]["status"] = "changed"
    assert (await ledger.tx(tx_id))["status"] == "pending"
    assert await ledger.follow_up_target("tx_00000000000000000000000000", "test") is None
    answer = await harness.call(project_id, m.FollowUpTarget(tx_id, "test"))
    assert answer["tx"] == await ledger.tx(tx_id)


async def test_nothing_is_followed_up_for_an_ended_checkout(harness):
    project_id, tx_id = await _pending_tx(harness)
    ledger = harness.ledger(project_id)
    await harness.call(project_id, m.CancelTx(tx_id, "test"))
    assert (await ledger.tx(tx_id))["status"] == "canceled"
    assert await ledger.follow_up_target(tx_id, "test") is None
    assert ledger.follow_up_ops(await ledger.tx(tx_id), "manual", "test", ()) == []


async def test_an_event_type_read_once_follows_the_events_rewrites(harness):
    project_id = await harness.project()
    ledger = harness.ledger(project_id)
    event = {"id": "evt_01JD0000000000000000000001", "type": "payment.succeeded"}
    await ledger.commit(ledger.event_ops(dict(event)), lambda _: None, None).wait()
    await ledger.reload()  # nothing in memory: the type is read from the store
    assert await ledger.event_type(event["id"]) == "payment.succeeded"
    rewritten = dict(event, type="payment.refunded")
    await ledger.commit(ledger.event_ops(rewritten), lambda _: None, None).wait()
    assert await ledger.event_type(event["id"]) == "payment.refunded"
    await ledger.reload()
    assert await ledger.event_type(event["id"]) == "payment.refunded"
    assert await ledger.event_type("evt_01JD0000000000000000000002") is None
