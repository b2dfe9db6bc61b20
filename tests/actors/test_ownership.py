"""A node's side of the leases (edge.actors.ownership) on a real PostgreSQL: taking a lease,
the 503 naming the holder, and a queue worker's ``claim``, which asks PostgreSQL about another
node's project at most once a third of a lease."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest
import trio
from support.postgres import execute, expire_lease, require_psycopg

require_psycopg()  # before psycopg and edge.store.postgres: they need libpq

from edge.actors.ownership import FORGET_EVERY_S, Leased  # noqa: E402
from edge.errors import Unavailable  # noqa: E402
from edge.store.postgres.leases import Leases  # noqa: E402
from edge.store.postgres.store import open_postgres_store  # noqa: E402

P = "prj_aaaaaaaaaaaaaaaa"
LEASE_S = 9.0


@dataclass
class Clock:
    now: float = 0.0

    def __call__(self) -> float:
        return self.now


class Counted(Leases):
    """Leases that count their acquire round trips."""

    asked = 0

    async def acquire(self, project_id: str):  # type: ignore[no-untyped-def]
        self.asked += 1
        return await super().acquire(project_id)


@pytest.fixture
async def two(pg_url: str) -> AsyncIterator[tuple[Leased, Leased, Counted, Clock]]:
    clock = Clock()
    async with open_postgres_store(pg_url) as store:
        a = Leases(store.pool, "node-a", "a:1", lease_s=LEASE_S)
        b = Counted(store.pool, "node-b", "b:1", lease_s=LEASE_S)
        yield Leased(a, clock), Leased(b, clock), b, clock


async def test_a_held_lease_is_a_503_naming_its_holder_and_claims_ask_once_a_while(two) -> None:
    a, b, b_leases, clock = two
    assert await a.take(P) == 1 and a.held(P)
    assert await a.take(P) == 1  # held: no new epoch, no round trip
    with pytest.raises(Unavailable) as refused:
        await b.take(P)
    assert "node-a" in refused.value.message and refused.value.retryable
    b_leases.asked = 0
    assert [await b.claim(P) for _ in range(5)] == [False] * 5
    assert b_leases.asked == 1  # one round trip for a pass over five of node a's entries
    clock.now += LEASE_S / 3
    assert not await b.claim(P) and b_leases.asked == 2  # asked again once a while has passed
    await a.give_back(P)
    clock.now += LEASE_S / 3
    assert await b.claim(P) and b.held(P)  # free now: taken, its work is node b's
    clock.now += LEASE_S
    assert not b.held(P)  # by node b's own clock the lease may have ended unrenewed


async def test_a_lease_taken_anew_while_the_overdue_beat_runs_is_not_lost(two, pg_url) -> None:
    """A node waking from a pause: its overdue heartbeat renews the epoch it had (which ran
    out), while a request takes the lease anew. The beat must not report that project lost:
    its actor, made under the new epoch, would be dropped while still at work, and the next
    request would make a second actor under that same epoch, which no fence tells apart (the
    chaos test once saw one Idempotency-Key make two transactions this way)."""
    _, waking, leases, clock = two
    for n in range(10):
        project = f"prj_aaaaaaaaaaaaaa{n:02d}"
        first = await waking.take(project)
        await expire_lease(pg_url, project)  # the node slept past its lease
        clock.now += LEASE_S + 1
        lost: list[tuple[str, int | None]] = []
        taken: list[int] = []
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_beat, waking, lost)
            nursery.start_soon(_take, waking, project, taken)
        assert taken == [first + 1]
        # reported lost only while no new lease was taken (then the actor dropped is the
        # old epoch's); never once the lease is held anew
        assert all(epoch is None for _, epoch in lost), lost
        assert waking.held(project, first + 1) and not waking.held(project, first)
        asked = leases.asked
        assert await waking.take(project) == first + 1 and leases.asked == asked


async def _beat(ownership: Leased, lost: list[tuple[str, int | None]]) -> None:
    """The projects the beat reports lost, each with this node's epoch of it at that moment
    (what the heartbeat's caller then drops the actor of)."""
    lost.extend((p, ownership.leases.epoch(p)) for p in await ownership.beat())


async def _take(ownership: Leased, project: str, taken: list[int]) -> None:
    taken.append(await ownership.take(project))


async def test_a_live_node_forgets_the_nodes_gone_a_week_once_an_hour(two, pg_url) -> None:
    """A node whose container starts with a fresh data dir has a new id each time: a live node
    forgets the nodes gone a week (``Leases.forget_gone``), looking once an hour."""
    a, _, _, clock = two
    gone = "INSERT INTO nodes (node_id, address, heartbeat_at) VALUES"
    gone += " ('node-old', 'x:1', clock_timestamp() - interval '8 days')"

    async def listed() -> set[str]:
        return {n.node_id for n in await a.leases.nodes()}

    await trio.to_thread.run_sync(execute, pg_url, gone)
    await a.forget_gone()  # its first look: at once
    assert "node-old" not in await listed()
    await trio.to_thread.run_sync(execute, pg_url, gone)
    clock.now += FORGET_EVERY_S - 1
    await a.forget_gone()  # within the hour: not yet
    assert "node-old" in await listed()
    clock.now += 1
    await a.forget_gone()
    assert "node-old" not in await listed()
