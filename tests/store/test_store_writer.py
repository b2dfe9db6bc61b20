"""The single writer: group commit, ordering, durability before wake-up, failure handling."""

from __future__ import annotations

import time

import lmdb
import pytest
import trio

from edge.store.codec import pack, unpack
from edge.store.engine import StoreUnavailable
from edge.store.lmdb.store import open_store
from edge.store.writer import StoreClosed, StoreWriter, open_writer


async def test_concurrent_writers_share_commits_and_all_land(tmp_path):
    with open_store(tmp_path / "s", map_size=2**28) as store:
        writer = StoreWriter(store)
        async with trio.open_nursery() as nursery:
            await nursery.start(writer.run)

            async def one(n: int) -> None:
                await writer.write([("records", f"k{n:04d}".encode(), pack({"n": n}))])
                # woken only after the commit: the value is readable now
                assert unpack(await store.get_raw(f"k{n:04d}".encode())) == {"n": n}

            async with trio.open_nursery() as writers:
                for n in range(500):
                    writers.start_soon(one, n)
            writer.close()
        assert writer.stats.tickets == 500
        assert writer.stats.commits < 500  # many tickets per fsync
        assert writer.stats.tickets_per_commit() > 1


async def test_tickets_commit_in_submission_order(tmp_path):
    with open_store(tmp_path / "s", map_size=2**26) as store:
        writer = StoreWriter(store)
        async with trio.open_nursery() as nursery:
            await nursery.start(writer.run)
            first = writer.submit([("records", b"k", pack({"v": 1}))])
            second = writer.submit([("records", b"k", pack({"v": 2}))])
            await second.wait()
            assert first.done
            assert unpack(await store.get_raw(b"k")) == {"v": 2}
            writer.close()


async def test_a_bad_ticket_fails_alone_and_its_group_lands(tmp_path):
    with open_store(tmp_path / "s", map_size=2**26) as store:
        writer = StoreWriter(store)
        async with trio.open_nursery() as nursery:
            await nursery.start(writer.run)
            good = writer.submit([("records", b"good", pack({}))])
            bad = writer.submit([("records", b"", pack({}))])  # LMDB refuses an empty key
            half = writer.submit([("records", b"half", pack({})), ("records", b"x" * 600, b"")])
            later = writer.submit([("records", b"later", pack({}))])
            await good.wait()
            await later.wait()
            for refused in (bad, half):
                with pytest.raises(lmdb.Error):
                    await refused.wait()
            assert (
                await store.get_raw(b"good") is not None
                and await store.get_raw(b"later") is not None
            )
            assert await store.get_raw(b"half") is None  # a ticket is all or nothing
            assert writer.stats.failures == 3  # the group, then each bad ticket alone
            # the writer keeps going after a failure
            await writer.write([("records", b"after", pack({}))])
            assert await store.get_raw(b"after") is not None
            writer.close()


async def test_close_commits_what_was_submitted_then_refuses(tmp_path):
    with open_store(tmp_path / "s", map_size=2**26) as store:
        writer = StoreWriter(store)
        async with trio.open_nursery() as nursery:
            await nursery.start(writer.run)
            ticket = writer.submit([("records", b"last", pack({}))])
            writer.close()
        assert ticket.done and ticket.error is None
        assert await store.get_raw(b"last") is not None
        try:
            writer.submit([("records", b"x", pack({}))])
        except StoreClosed:
            pass
        else:
            raise AssertionError("submit after close must refuse")


async def test_open_writer_commits_what_was_submitted_before_it_closes(tmp_path):
    with open_store(tmp_path / "s", map_size=2**26) as store:
        async with open_writer(store) as writer:
            tickets = [
                writer.submit([("records", f"k{n}".encode(), pack({"n": n}))]) for n in range(3)
            ]
        assert all(ticket.done and ticket.error is None for ticket in tickets)
        assert [unpack(await store.get_raw(f"k{n}".encode())) for n in range(3)] == [
            {"n": n} for n in range(3)
        ]
        with pytest.raises(StoreClosed):
            writer.submit([("records", b"late", pack({}))])


async def test_an_injected_fault_fails_the_commits_it_sees_and_goes_with_its_block(tmp_path):
    with open_store(tmp_path / "s", map_size=2**26) as store:
        async with open_writer(store) as writer:
            seen: list[int] = []

            def full_disk(group):  # type: ignore[no-untyped-def]
                seen.append(len(group))
                raise OSError(28, "No space left on device")

            with writer.inject(full_disk), pytest.raises(StoreUnavailable):  # a 503, retryable
                await writer.write([("records", b"refused", pack({}))])
            assert seen == [1] and await store.get_raw(b"refused") is None  # nothing of it written
            assert writer.fault is None  # gone with its block: commits land again
            await writer.write([("records", b"landed", pack({}))])
            assert await store.get_raw(b"landed") is not None and seen == [1]


async def test_a_full_map_is_store_unavailable_in_the_interface_s_words(tmp_path):
    """LMDB says "no room" in its own error class; its engine says it as the interface does, so
    the writer, which knows no engine, fails the ticket with a retryable 503."""
    with open_store(tmp_path / "s", map_size=2**20) as store:
        async with open_writer(store) as writer:
            with pytest.raises(StoreUnavailable) as refused:
                await writer.write([("records", b"big%d" % n, bytes(4096)) for n in range(512)])
            assert isinstance(refused.value.__cause__, lmdb.MapFullError)
            assert await store.get_raw(b"big0") is None  # nothing of it written
            await writer.write([("records", b"small", b"")])  # what fits still lands


async def test_the_stats_tell_a_commit_s_time_in_the_engine_and_its_round_trip(tmp_path):
    with open_store(tmp_path / "s", map_size=2**26) as store:
        async with open_writer(store) as writer:
            slow_s = 0.05

            def slow_disk(group):  # type: ignore[no-untyped-def]
                time.sleep(slow_s)  # before the engine's commit: the hand-off's, not the engine's

            await writer.write([("records", b"first", pack({}))])
            with writer.inject(slow_disk):
                await writer.write([("records", b"second", pack({}))])
            stats = writer.stats
            assert stats.commits == 2
            assert 0 < stats.engine_s < stats.round_trip_s
            assert stats.round_trip_s - stats.engine_s >= slow_s
            assert stats.commit_ms() == 1000 * stats.engine_s / 2
            assert stats.round_trip_ms() == 1000 * stats.round_trip_s / 2
