"""The notification queue's fan-out (edge.store.notifyq) on a real store: an event owes one
short key however many endpoints take it, those keys come oldest first, and each becomes one
queue entry an endpoint that takes the event when it is fanned out; finished entries and the
attempt logs of every endpoint are pruned past the retention."""

from __future__ import annotations

from typing import Any

import pytest
from support.waits import until

from edge.domain import ids
from edge.domain.events import FEED_KEPT_MS
from edge.store import notifyq, outbox
from edge.store.engine import Contended
from edge.store.lmdb.store import Store
from edge.store.writer import StoreWriter

PROJECT = "prj_0000000000000000"


def project(*endpoints: dict[str, Any]) -> dict[str, Any]:
    return {"id": PROJECT, "endpoints": {e["id"]: e for e in endpoints}}


def endpoint(n: int, mode: str = "test", types: list[str] | None = None, enabled: bool = True):  # type: ignore[no-untyped-def]
    return {"id": f"we_{n:026d}", "mode": mode, "types": types or [], "enabled": enabled}


def event(type_: str = "payment.succeeded", is_test: bool = True) -> dict[str, Any]:
    return {"id": ids.new_evt_id(), "txId": "tx_1", "isTest": is_test, "type": type_}


def test_an_event_owes_one_key_however_many_endpoints_take_it():
    many = project(endpoint(1), endpoint(2), endpoint(3))
    one = event()
    assert notifyq.owed_ops(many, one) == [("notify", b"f" + one["id"].encode(), PROJECT.encode())]


def test_an_event_no_endpoint_takes_owes_nothing():
    live_only = project(endpoint(1, mode="live"), endpoint(2, enabled=False))
    assert notifyq.owed_ops(live_only, event()) == []
    refunds = project(endpoint(1, types=["payment.refunded"]))
    assert notifyq.owed_ops(refunds, event("payment.succeeded")) == []
    assert notifyq.owed_ops(refunds, event("payment.refunded")) != []


async def test_owed_events_come_oldest_first_and_fan_out_to_the_endpoints_taking_them(
    store: Store, writer: StoreWriter
) -> None:
    record = project(endpoint(1), endpoint(2), endpoint(3, types=["payment.refunded"]))
    made = [event() for _ in range(5)]
    for one in reversed(made):  # written in any order, read in the ids' (time) order
        await writer.write(notifyq.owed_ops(record, one))
    owed = await notifyq.fan_outs(store, 10)
    assert [(o.project_id, o.event_id) for o in owed] == [(PROJECT, one["id"]) for one in made]
    assert await notifyq.depth(store, 100) == 5

    await writer.write(notifyq.fan_out_ops(owed[0], record, made[0], 1_000))
    queued = await outbox.due(store, 1_000, 10, db=notifyq.DB)
    assert sorted(e["params"]["endpointId"] for e in queued) == [
        endpoint(1)["id"],
        endpoint(2)["id"],
    ]
    assert {e["params"]["eventId"] for e in queued} == {made[0]["id"]}
    assert (await notifyq.fan_outs(store, 10))[0] == owed[1]
    assert await notifyq.depth(store, 100) == 4 + 2

    # a pruned event (or a deleted project) owes nothing any more
    await writer.write(notifyq.fan_out_ops(owed[1], record, None, 1_000))
    assert await notifyq.depth(store, 100) == 3 + 2


async def test_a_fan_out_entry_of_an_earlier_node_is_refiled_as_its_key(
    store: Store, writer: StoreWriter
) -> None:
    one = event()
    legacy = outbox.enqueue_ops(
        PROJECT, "tx_1", "", "test", notifyq.FAN_OUT_ENTRY, {"eventId": one["id"]}, 5, db="notify"
    )
    await writer.write(legacy)
    (entry,) = await outbox.due(store, 5, 10, db=notifyq.DB)
    await writer.write(notifyq.refiled_ops(entry))
    assert await outbox.due(store, 5, 10, db=notifyq.DB) == []
    assert await notifyq.fan_outs(store, 10) == [(PROJECT, one["id"], PROJECT.encode())]


async def test_the_attempt_logs_of_every_endpoint_are_pruned_past_the_retention(
    store: Store, writer: StoreWriter
) -> None:
    endpoints = [endpoint(n)["id"] for n in (1, 2, 3)]
    line = {"at": 1, "eventId": "evt_1", "status": 500}
    for n, endpoint_id in enumerate(endpoints):  # 3, 4 and 5 lines
        await writer.write([notifyq.log_op(endpoint_id, line) for _ in range(3 + n)])
    cut = ids.ulid_time_ms(ids.new_ulid()) + 1
    await until(  # the fresh line's millisecond is past the cut: the clock has moved on
        lambda: ids.ulid_time_ms(ids.new_ulid()) >= cut, what="the next millisecond", every=0.001
    )
    fresh = notifyq.log_op(endpoints[1], line)
    await writer.write([fresh])
    later = cut + outbox.RETENTION_MS

    first = await notifyq.expired_ops(store, later, batch=5)
    assert len(first) == 5  # a batch at a time, over the endpoints in turn
    await writer.write(first)
    await writer.write(await notifyq.expired_ops(store, later))
    assert [len(await notifyq.log(store, e)) for e in endpoints] == [0, 1, 0]
    assert (await notifyq.log(store, endpoints[1]))[0] == line
    assert await notifyq.expired_ops(store, later) == []


async def test_an_event_matched_later_is_not_owed_twice_to_an_endpoint_that_took_it_unmatched(
    store: Store, writer: StoreWriter
) -> None:
    """One message a ``webhook-id`` (CONTRACT 4.8): the endpoint queued the event while it was
    ``unmatched`` is skipped when the match fans it out again; the others are owed it now."""
    both = endpoint(1, types=["unmatched", "payment.disputed"])
    record = project(both, endpoint(2), endpoint(3, types=["unmatched"]))
    one = event("unmatched") | {"txId": None}
    await writer.write(notifyq.owed_ops(record, one))
    (owed,) = await notifyq.fan_outs(store, 10)
    await writer.write(notifyq.fan_out_ops(owed, record, one, 1_000))
    first = await outbox.due(store, 1_000, 10, db=notifyq.DB)
    assert sorted(e["params"]["endpointId"] for e in first) == [both["id"], endpoint(3)["id"]]
    told = await notifyq.told(store, one["id"])
    assert told is not None and set(told.decode().split()) == {both["id"], endpoint(3)["id"]}

    matched = one | {"type": "payment.disputed", "txId": "tx_1", "matchedAt": 2_000}
    await writer.write(notifyq.owed_ops(record, matched))
    (again,) = await notifyq.fan_outs(store, 10)
    await writer.write(notifyq.fan_out_ops(again, record, matched, 2_000, told))
    queued = await outbox.due(store, 2_000, 10, db=notifyq.DB)
    assert sorted(e["params"]["endpointId"] for e in queued if e["createdAt"] == 2_000) == [
        endpoint(2)["id"]
    ]
    assert await notifyq.told(store, one["id"]) is None  # its work is done


async def test_what_an_unmatched_event_was_owed_to_is_kept_as_long_as_the_feed_keeps_it(
    store: Store, writer: StoreWriter
) -> None:
    record = project(endpoint(1, types=["unmatched"]))
    one = event("unmatched")
    await writer.write(notifyq.owed_ops(record, one))
    (owed,) = await notifyq.fan_outs(store, 10)
    await writer.write(notifyq.fan_out_ops(owed, record, one, 1_000))
    made = ids.ulid_time_ms(one["id"].removeprefix("evt_"))
    after_the_queue = made + outbox.RETENTION_MS + 1
    await writer.write(await notifyq.expired_ops(store, after_the_queue))
    assert await notifyq.told(store, one["id"]) is not None
    await writer.write(await notifyq.expired_ops(store, made + FEED_KEPT_MS + 1))
    assert await notifyq.told(store, one["id"]) is None


async def test_a_fan_out_read_before_a_match_and_committed_after_it_does_not_take_the_matchs_key(
    store: Store, writer: StoreWriter
) -> None:
    """The match owes the event again while a fan-out of it as unmatched is under way: that
    fan-out fails its guard, and the next reads the event matched, so the endpoints of its
    real type are told it (none lost)."""
    plain = endpoint(2)
    record = project(endpoint(1, types=["unmatched"]), plain)
    one = event("unmatched") | {"txId": None}
    await writer.write(notifyq.owed_ops(record, one))
    (stale,) = await notifyq.fan_outs(store, 10)
    matched = one | {"type": "payment.disputed", "txId": "tx_1", "matchedAt": 2_000}
    await writer.write(notifyq.owed_ops(record, matched))
    with pytest.raises(Contended):
        await writer.write(notifyq.fan_out_ops(stale, record, one, 1_000))
    (owed,) = await notifyq.fan_outs(store, 10)
    await writer.write(notifyq.fan_out_ops(owed, record, matched, 2_000))
    queued = await outbox.due(store, 2_000, 10, db=notifyq.DB)
    assert [e["params"]["endpointId"] for e in queued] == [plain["id"]]
    assert await notifyq.fan_outs(store, 10) == []
