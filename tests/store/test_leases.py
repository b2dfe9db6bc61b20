"""Leases and node heartbeats (edge.store.postgres.leases) on a real PostgreSQL: acquire, renew,
expiry, takeover, release, move, heartbeats. Time passing is PostgreSQL's: a test ends a lease by
moving its end into the past (``expire_lease``), or waits out a short one."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable

import pytest
import trio
from support.postgres import execute, expire_lease, require_psycopg

require_psycopg()  # before psycopg and edge.store.postgres: they need libpq


from edge.store.postgres.leases import LeaseHeld, LeaseLost, Leases, UnknownNode  # noqa: E402
from edge.store.postgres.store import open_postgres_store  # noqa: E402

P = "prj_aaaaaaaaaaaaaaaa"
Q = "prj_bbbbbbbbbbbbbbbb"


@pytest.fixture
async def nodes(pg_url: str) -> AsyncIterator[tuple[Leases, Leases]]:
    async with open_postgres_store(pg_url) as store:
        yield (
            Leases(store.pool, "node-a", "10.0.0.1:8080"),
            Leases(store.pool, "node-b", "10.0.0.2:8080"),
        )


async def test_a_free_lease_is_taken_at_epoch_one_and_a_live_one_refused(nodes) -> None:
    a, b = nodes
    lease = await a.acquire(P)
    assert (lease.project_id, lease.owner, lease.epoch, lease.live) == (P, "node-a", 1, True)
    assert a.epoch(P) == 1
    with pytest.raises(LeaseHeld) as refused:
        await b.acquire(P)
    assert (refused.value.owner, refused.value.expires_at) == ("node-a", lease.expires_at)
    assert "leased to node node-a until" in str(refused.value)
    assert b.epoch(P) is None
    again = await a.acquire(P)  # its own live lease: taken up anew, a new epoch
    assert again.epoch == 2 and a.epoch(P) == 2


async def test_an_expired_lease_is_taken_over_at_the_next_epoch(nodes, pg_url) -> None:
    a, b = nodes
    await a.acquire(P)
    await expire_lease(pg_url, P)
    taken = await b.acquire(P)
    assert (taken.owner, taken.epoch) == ("node-b", 2)
    with pytest.raises(LeaseLost):  # a cannot renew what it lost
        await a.renew(P)
    assert a.epoch(P) is None
    leases = {lease.project_id: lease for lease in await a.leases()}
    assert (leases[P].owner, leases[P].epoch, leases[P].live) == ("node-b", 2, True)


async def test_a_short_lease_runs_out_by_postgresql_clock(pg_url) -> None:
    async with open_postgres_store(pg_url) as store:
        a = Leases(store.pool, "node-a", "a", lease_s=0.2)
        b = Leases(store.pool, "node-b", "b", lease_s=0.2)
        await a.acquire(P)
        with pytest.raises(LeaseHeld):
            await b.acquire(P)
        await trio.sleep(0.3)  # real time: the lease's end is PostgreSQL's clock's
        assert (await b.acquire(P)).epoch == 2


async def test_renew_moves_the_end_of_a_held_lease(nodes, pg_url) -> None:
    a, _ = nodes
    first = await a.acquire(P)
    renewed = await a.renew(P)
    assert renewed.epoch == first.epoch and renewed.expires_at > first.expires_at
    with pytest.raises(LeaseLost):
        await a.renew(Q)  # never held
    await expire_lease(pg_url, P)
    with pytest.raises(LeaseLost):  # expired, even untaken: acquire it anew (a new epoch)
        await a.renew(P)
    assert (await a.acquire(P)).epoch == 2


async def test_release_frees_the_lease_for_the_next_node(nodes) -> None:
    a, b = nodes
    await a.acquire(P)
    await a.acquire(Q)
    await a.release(P)
    assert a.held() == {Q: 1}
    assert (await b.acquire(P)).epoch == 2
    await a.release_all()  # a drain
    assert a.held() == {}
    assert (await b.acquire(Q)).epoch == 2
    await a.release(P)  # not a's any more: nothing changes
    lease = await b.lease(P)
    assert lease is not None and (lease.owner, lease.live) == ("node-b", True)


async def test_heartbeat_records_the_node_and_renews_its_leases(nodes, pg_url) -> None:
    a, b = nodes
    await a.acquire(P)
    await a.acquire(Q)
    before = {lease.project_id: lease.expires_at for lease in await a.leases()}
    assert await a.heartbeat() == []
    after = {lease.project_id: lease.expires_at for lease in await a.leases()}
    assert all(after[p] > before[p] for p in (P, Q))
    await expire_lease(pg_url, Q)
    await b.acquire(Q)
    assert await a.heartbeat() == [Q]  # lost to b: dropped
    assert a.held() == {P: 1}
    await b.heartbeat()
    listed = await a.nodes()
    assert [(n.node_id, n.address, n.alive) for n in listed] == [
        ("node-a", "10.0.0.1:8080", True),
        ("node-b", "10.0.0.2:8080", True),
    ]
    await trio.to_thread.run_sync(
        execute, pg_url, "UPDATE nodes SET heartbeat_at = heartbeat_at - interval '1 hour'"
    )
    assert not any(n.alive for n in await a.nodes())


async def test_a_heartbeat_tells_which_other_nodes_beat_within_a_lease(nodes, pg_url) -> None:
    """What a node's queue workers are woken by when another node stops beating (its leases
    lapsed, its owed work is for the nodes left): the same statement as the beat."""
    a, b = nodes
    await a.heartbeat()
    assert a.others == frozenset()  # itself is never among them
    await b.heartbeat()
    await a.heartbeat()
    assert (a.others, b.others) == ({"node-b"}, {"node-a"})
    await trio.to_thread.run_sync(
        execute,
        pg_url,
        "UPDATE nodes SET heartbeat_at = heartbeat_at - interval '1 hour' WHERE node_id = 'node-b'",
    )
    await a.heartbeat()
    assert a.others == frozenset()


async def test_a_heartbeat_reads_postgresql_clock_for_the_time_nodes_share(pg_url) -> None:
    """Two nodes whose clocks are a minute apart tell the same time after a beat: each reads
    PostgreSQL's clock and carries it on by its own (monotonic) clock; before the first beat,
    each tells its machine's wall clock."""

    def clock(off_s: int) -> Callable[[], int]:
        return lambda: time.time_ns() // 1_000_000 + off_s * 1000

    ahead, behind = clock(30), clock(-30)
    async with open_postgres_store(pg_url) as store:
        a = Leases(store.pool, "node-a", "10.0.0.1:8080", wall_ms=ahead, local_ms=ahead)
        b = Leases(store.pool, "node-b", "10.0.0.2:8080", wall_ms=behind, local_ms=behind)
        assert abs(a.clock_ms() - b.clock_ms() - 60_000) < 1_000  # their own, unread
        await a.heartbeat()
        await b.heartbeat()
        rows = await trio.to_thread.run_sync(
            execute, pg_url, "SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint"
        )
        postgres_ms = int(rows[0][0])
        assert abs(a.clock_ms() - postgres_ms) < 1_000
        assert abs(b.clock_ms() - postgres_ms) < 1_000
        assert abs(a.clock_ms() - b.clock_ms()) < 1_000
        await a.heartbeat()
        assert a.others == {"node-b"}  # the clock's row is no node


async def test_move_hands_a_project_to_a_live_node(nodes) -> None:
    a, b = nodes
    await a.acquire(P)
    with pytest.raises(UnknownNode):  # b has never beaten
        await a.move(P, "node-b")
    await b.heartbeat()
    moved = await a.move(P, "node-b")
    assert (moved.owner, moved.epoch) == ("node-b", 2)
    assert a.epoch(P) is None  # a's commits of P fail from now on
    with pytest.raises(LeaseHeld):
        await a.acquire(P)
    taken_up = await b.acquire(P)  # b's next request takes it up
    assert (taken_up.owner, taken_up.epoch) == ("node-b", 3)
    never_leased = await a.move(Q, "node-b")
    assert (never_leased.owner, never_leased.epoch) == ("node-b", 1)


async def test_a_node_gone_a_week_is_forgotten_never_the_one_forgetting(pg_url) -> None:
    """A node whose container starts with a fresh data dir has a new id each time: the nodes
    that stopped beating are listed as gone for a week, then forgotten (its own row never, even
    when it was gone itself). How often a node looks is its ownership's (tests/actors)."""
    async with open_postgres_store(pg_url) as store:
        a = Leases(store.pool, "node-a", "a:1")
        b = Leases(store.pool, "node-b", "b:1")
        await trio.to_thread.run_sync(
            execute,
            pg_url,
            "INSERT INTO nodes (node_id, address, heartbeat_at) VALUES"
            " ('node-old', 'x:1', clock_timestamp() - interval '8 days'),"
            " ('node-day', 'y:1', clock_timestamp() - interval '1 day'),"
            " ('node-a', 'a:1', clock_timestamp() - interval '8 days')",
        )
        assert await a.forget_gone() == 1  # node-old; not itself, however long it was gone
        await a.heartbeat()
        await b.heartbeat()
        assert {n.node_id: n.alive for n in await b.nodes()} == {
            "node-a": True,
            "node-b": True,
            "node-day": False,
        }
        assert await a.forget_gone() == 0


async def test_forgetting_waits_for_no_row_another_node_is_writing(pg_url) -> None:
    """Two nodes gone a week that start again together each write their own row and forget
    the other's: were either to wait for the row the other holds, they would wait on each
    other. A row locked by another statement is skipped (forgotten at a later look)."""
    import psycopg

    async with open_postgres_store(pg_url) as store:
        a = Leases(store.pool, "node-a", "a:1")
        await trio.to_thread.run_sync(
            execute,
            pg_url,
            "INSERT INTO nodes (node_id, address, heartbeat_at) VALUES"
            " ('node-b', 'b:1', clock_timestamp() - interval '8 days')",
        )
        holder = await trio.to_thread.run_sync(psycopg.connect, pg_url)
        waited = False
        try:
            # node-b's own beat under way: its row is locked until that commits
            await trio.to_thread.run_sync(
                holder.execute, "UPDATE nodes SET address = address WHERE node_id = 'node-b'"
            )
            async with trio.open_nursery() as nursery:
                beaten = trio.Event()

                async def beat() -> None:
                    await a.heartbeat()
                    await a.forget_gone()  # skips the row held
                    beaten.set()

                nursery.start_soon(beat)
                while not beaten.is_set():
                    if await trio.to_thread.run_sync(execute, pg_url, _WAITING_ON_A_ROW):
                        waited = True  # seen waiting: let the row go, so the beat can end
                        await trio.to_thread.run_sync(holder.rollback)
                        break
                    await trio.sleep(0.01)
            assert not waited, "the beat or the forgetting waited for the row another node writes"
            assert "node-b" in {n.node_id for n in await a.nodes()}
        finally:
            # the row's lock is let go once the rollback is answered; a close alone returns
            # before the server has ended the transaction, and a look straight after it could
            # still find the row locked (and skip it)
            await trio.to_thread.run_sync(holder.rollback)
            await trio.to_thread.run_sync(holder.close)
        assert await a.forget_gone() == 1


# a statement of this test's database waiting for a lock another holds
_WAITING_ON_A_ROW = (
    "SELECT pid FROM pg_stat_activity"
    " WHERE wait_event_type = 'Lock' AND datname = current_database()"
)
