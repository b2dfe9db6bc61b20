"""The one matching rule (CONTRACT 4.3) on a real store, for any stream of events: a transaction
succeeds only by an event on a provider object the node linked to it, for its own amount and
currency; an echoed transaction id alone never moves it, and money that is not what it asked for
flags it instead."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import trio
from actors.project.harness import delivery, open_harness
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from edge.actors import messages as m
from edge.store import keys

ASKED = (1999, "EUR")  # the book's price (harness BOOK)

events = st.lists(
    st.fixed_dictionaries(
        {
            # the node's own object, another payment's, or none but the echoed tx id
            "ref": st.sampled_from(["own", "foreign", "echo only"]),
            "amount": st.sampled_from([1999, 100, 1999_00, None]),
            "currency": st.sampled_from(["EUR", "USD"]),
            "status": st.sampled_from(["succeeded", "processing", None]),
        }
    ),
    min_size=1,
    max_size=6,
)


async def _linked_tx(harness: Any, project_id: str) -> dict[str, Any]:
    """A pending echo transaction whose provider object the node linked, as a checkout does."""
    answer = await harness.call(project_id, m.StartCheckout("manual", "book", {}, 1, "test"))
    ledger = harness.ledger(project_id)
    tx = await ledger.tx(answer["txId"])
    tx["provider"], tx["providerRef"] = "echo", f"c_{tx['id']}"
    ops = ledger.tx_ops(tx)
    ops.append(ledger.index_op(keys.PROVIDER_REF, "echo", tx["providerRef"], tx["id"]))
    await ledger.submit(ops).wait()
    return dict(tx)


def _asks_money(event: dict[str, Any]) -> bool:
    return event["status"] is not None


def _as_asked(event: dict[str, Any]) -> bool:
    return event["amount"] is None or (event["amount"], event["currency"]) == ASKED


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(stream=events)
def test_only_the_own_object_with_the_asked_amount_moves_a_transaction(echo, stream):
    with tempfile.TemporaryDirectory() as path:
        record = trio.run(_deliver, Path(path), stream)
    own = [e for e in stream if e["ref"] == "own" and _asks_money(e)]
    paid = any(e["status"] == "succeeded" and _as_asked(e) for e in own)
    assert (record["status"] == "succeeded") is paid, (stream, record["status"])
    if not own:
        assert record["status"] == "pending"  # an echoed id alone never moves it
    mismatched = any(not _as_asked(e) for e in own)
    assert bool(record.get("needsAttention")) is mismatched
    codes = {flag["code"] for flag in record.get("attention") or ()}
    assert codes == ({"amount_mismatch"} if mismatched else set())


async def _deliver(path: Path, stream: list[dict[str, Any]]) -> dict[str, Any]:
    """Deliver ``stream`` to a new transaction; its record afterwards."""
    async with open_harness(path) as harness:
        project_id = await harness.project("echo", "manual")
        tx = await _linked_tx(harness, project_id)
        for n, event in enumerate(stream):
            body: dict[str, Any] = {"id": f"evt_{n}", "at": 1000 + n, "txId": tx["id"]}
            if event["ref"] == "own":
                body["refs"] = [tx["providerRef"]]
            elif event["ref"] == "foreign":
                body["refs"] = [f"c_elsewhere_{n}"]
            if event["status"]:
                body.update(status=event["status"], type=f"payment.{event['status']}")
            else:
                body["type"] = "checkout.created"
            if event["amount"] is not None:
                body.update(amount=event["amount"], currency=event["currency"])
            answer = await harness.call(project_id, delivery(**body))
            # a second report of a change already told is a duplicate of it (one change, one
            # event); no event id repeats here
            assert answer["received"] is True
        return dict(await harness.ledger(project_id).tx(tx["id"]))
