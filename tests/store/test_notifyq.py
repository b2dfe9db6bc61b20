"""The notification queue's fan-out (edge.store.notifyq) on a real store: an event owes one
short key however many endpoints take it, those keys come oldest first, and each becomes one
queue entry an endpoint that takes the event when it is fanned out; finished entries and the
attempt logs of every endpoint are pruned past the retention."""

from __future__ import annotations

from typing import Any

import pytest
from support.engines import OpenEngine
from support.waits import until

from edge.domain import ids
from edge.store import keys, notifyq, outbox
from edge.store.codec import pack
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


async def stored(writer: StoreWriter, record: dict[str, Any], one: dict[str, Any]) -> bytes:
    """``one`` stored as the project's actor stores an event, with what it owes: its bytes."""
    raw = pack(one)
    key = keys.record(PROJECT, keys.EVENT, one["id"])
    await writer.write([("records", key, raw), *notifyq.owed_ops(record, one)])
    return raw


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
        await stored(writer, record, one)
    owed = await notifyq.fan_outs(store, 10)
    assert owed == [(PROJECT, one["id"], PROJECT.encode()) for one in made]
    assert await notifyq.depth(store, 100) == 5

    await writer.write(await notifyq.fan_out(store, owed[0], record, 1_000))
    queued = await outbox.due(store, 1_000, 10, db=notifyq.DB)
    assert sorted(e["params"]["endpointId"] for e in queued) == [
        endpoint(1)["id"],
        endpoint(2)["id"],
    ]
    assert {e["params"]["eventId"] for e in queued} == {made[0]["id"]}
    assert {e["params"]["type"] for e in queued} == {"payment.succeeded"}
    assert (await notifyq.fan_outs(store, 10))[0] == (PROJECT, made[1]["id"], PROJECT.encode())
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


async def _fanned_out_unmatched(
    store: Any, writer: StoreWriter, record: dict[str, Any]
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """An unmatched event stored and fanned out: it, and its queue entries."""
    one = event("unmatched") | {"txId": None}
    await stored(writer, record, one)
    (owed,) = await notifyq.fan_outs(store, 10)
    await writer.write(await notifyq.fan_out(store, owed, record, 1_000))
    return one, await outbox.due(store, 1_000, 10, db=notifyq.DB)


async def _matched(
    store: Any, writer: StoreWriter, record: dict[str, Any], one: dict[str, Any]
) -> list[str]:
    """``one`` matched later, as the project's actor stores it, and fanned out again: the
    endpoints owed it now."""
    matched = one | {"type": "payment.disputed", "txId": "tx_1", "matchedAt": 2_000}
    await stored(writer, record, matched)
    (owed,) = await notifyq.fan_outs(store, 10)
    await writer.write(await notifyq.fan_out(store, owed, record, 2_000))
    queued = await outbox.due(store, 2_000, 10, db=notifyq.DB)
    return sorted(e["params"]["endpointId"] for e in queued if e["createdAt"] == 2_000)


async def test_an_event_matched_later_is_not_owed_twice_to_an_endpoint_that_has_it(
    engine: OpenEngine,
) -> None:
    """One message a ``webhook-id`` (CONTRACT 4.8): an endpoint whose entry for the event as
    ``unmatched`` went out, or is still to go, is skipped when the match fans it out again;
    the others that take its real type are owed it now."""
    store, writer = engine.reads, engine.writer
    sent, waiting = endpoint(1, types=["unmatched", "payment.disputed"]), endpoint(2)
    still = endpoint(3, types=["unmatched", "payment.disputed"])
    record = project(sent, waiting, still)
    one, first = await _fanned_out_unmatched(store, writer, record)
    assert sorted(e["params"]["endpointId"] for e in first) == [sent["id"], still["id"]]
    (went,) = [e for e in first if e["params"]["endpointId"] == sent["id"]]
    await writer.write(outbox.settle_ops(went, {"at": 1_500}, state=outbox.DONE, db=notifyq.DB))

    assert await _matched(store, writer, record, one) == [waiting["id"]]
    told = keys_of(await store.scan(notifyq.TOLD, db=notifyq.DB))
    assert told == []  # its work is done


async def test_an_endpoint_whose_unmatched_entry_was_dropped_or_failed_is_owed_the_match(
    engine: OpenEngine,
) -> None:
    """Not acknowledged (dropped while the endpoint was off, or failed for good): the match
    may and must be told (CONTRACT 4.8)."""
    store, writer = engine.reads, engine.writer
    dropped = endpoint(1, types=["unmatched", "payment.disputed"])
    failed = endpoint(2, types=["unmatched", "payment.disputed"])
    record = project(dropped, failed)
    one, first = await _fanned_out_unmatched(store, writer, record)
    for entry in first:
        state = outbox.DROPPED if entry["params"]["endpointId"] == dropped["id"] else outbox.FAILED
        await writer.write(outbox.settle_ops(entry, {"at": 1_500}, state=state, db=notifyq.DB))
    assert await _matched(store, writer, record, one) == [dropped["id"], failed["id"]]


async def test_a_fan_out_read_before_a_match_and_committed_after_it_does_not_take_the_matchs_key(
    engine: OpenEngine,
) -> None:
    """The match owes the event again while a fan-out of it as unmatched is under way: that
    fan-out fails its guard (the event is no longer as it read it), and the next reads the
    event matched, so the endpoints of its real type are told it (none lost)."""
    store, writer = engine.reads, engine.writer
    plain = endpoint(2)
    record = project(endpoint(1, types=["unmatched"]), plain)
    one = event("unmatched") | {"txId": None}
    await stored(writer, record, one)
    (stale,) = await notifyq.fan_outs(store, 10)
    stale_ops = await notifyq.fan_out(store, stale, record, 1_000)
    matched = one | {"type": "payment.disputed", "txId": "tx_1", "matchedAt": 2_000}
    await stored(writer, record, matched)
    with pytest.raises(Contended):
        await writer.write(stale_ops)
    (owed,) = await notifyq.fan_outs(store, 10)
    await writer.write(await notifyq.fan_out(store, owed, record, 2_000))
    queued = await outbox.due(store, 2_000, 10, db=notifyq.DB)
    assert [e["params"]["endpointId"] for e in queued] == [plain["id"]]
    assert await notifyq.fan_outs(store, 10) == []


async def test_an_endpoint_that_took_a_replay_of_an_unmatched_event_is_not_owed_the_match(
    engine: OpenEngine,
) -> None:
    """Its fan-out's delivery failed for good, the merchant replayed the event and took it:
    the endpoint has it, under its ``webhook-id``, and the match does not send it again."""
    store, writer = engine.reads, engine.writer
    both = endpoint(1, types=["unmatched", "payment.disputed"])
    record = project(both)
    one, (first,) = await _fanned_out_unmatched(store, writer, record)
    await writer.write(outbox.settle_ops(first, {"at": 1_500}, state=outbox.FAILED, db=notifyq.DB))
    replay = notifyq.enqueue_ops(PROJECT, both["id"], one, "test", 1_600)
    await writer.write(replay)
    (again,) = await outbox.due(store, 1_600, 10, db=notifyq.DB)
    await writer.write(outbox.settle_ops(again, {"at": 1_700}, state=outbox.DONE, db=notifyq.DB))
    assert await _matched(store, writer, record, one) == []


def keys_of(rows: list[tuple[bytes, bytes]]) -> list[bytes]:
    return [key for key, _ in rows]


async def test_an_event_that_may_change_again_after_a_match_keeps_whom_it_was_told_to(
    engine: OpenEngine,
) -> None:
    """A refund stored unmatched, matched while its payment is still under way (held: it may
    yet change its word), then applied as the one that refunded it all: the endpoint that
    took it as unmatched is owed it at neither change."""
    store, writer = engine.reads, engine.writer
    wide = endpoint(1, types=["unmatched", "payment.partially_refunded", "payment.refunded"])
    record = project(wide)
    one, (first,) = await _fanned_out_unmatched(store, writer, record)
    await writer.write(outbox.settle_ops(first, {"at": 1_500}, state=outbox.DONE, db=notifyq.DB))
    held = one | {"type": "payment.partially_refunded", "txId": "tx_1", "matchedAt": 2_000}
    for change in (held | {"appliedAt": None}, held | {"type": "payment.refunded", "appliedAt": 3}):
        await stored(writer, record, change)
        (owed,) = await notifyq.fan_outs(store, 10)
        await writer.write(await notifyq.fan_out(store, owed, record, 2_000))
        assert await outbox.due(store, 10**12, 10, db=notifyq.DB) == []
        assert await notifyq.fan_outs(store, 10) == []
    assert keys_of(await store.scan(notifyq.TOLD, db=notifyq.DB)) == []  # done with it now
