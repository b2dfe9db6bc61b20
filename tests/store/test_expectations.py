"""Expectations (``engine.expect_op``): a ticket that asserts what it read commits only while
that still holds, on both engines; on PostgreSQL two stores (two nodes) racing to take one key,
absent or present, take it once; a claimed key written without asserting it is refused by
both engines (the claim rule, ``engine.CLAIMED``)."""

from __future__ import annotations

import pytest
import trio
from support.engines import OpenEngine
from support.postgres import require_psycopg

from edge.store import accounts, sealcheck, signcheck
from edge.store.engine import Contended, Unclaimed, claimed, expect_op
from edge.store.writer import StoreWriter, open_writer

EMAIL = b"e:someone@example.com"


async def test_a_ticket_commits_only_while_what_it_read_holds(engine: OpenEngine) -> None:
    writer = engine.writer
    await writer.write([expect_op("accounts", EMAIL, None), ("accounts", EMAIL, b"acc_1")])
    with pytest.raises(Contended):  # present now: "absent" no longer holds
        await writer.write([expect_op("accounts", EMAIL, None), ("accounts", EMAIL, b"acc_2")])
    with pytest.raises(Contended):  # a value other than the one there
        await writer.write(
            [expect_op("accounts", EMAIL, b"acc_9"), ("accounts", b"a:acc_1", b"changed")]
        )
    assert await engine.reads.get_raw(EMAIL, db="accounts") == b"acc_1"
    assert await engine.reads.get_raw(b"a:acc_1", db="accounts") is None  # nothing of it
    await writer.write([expect_op("accounts", EMAIL, b"acc_1"), ("accounts", EMAIL, None)])
    assert await engine.reads.get_raw(EMAIL, db="accounts") is None
    # the same key in another database is another key
    await writer.write([expect_op("records", EMAIL, None), ("records", EMAIL, b"x")])


async def test_a_claimed_key_is_given_a_value_only_by_a_ticket_that_asserts_it(
    engine: OpenEngine,
) -> None:
    """On PostgreSQL a plain write could create the key between a claim's check and its commit,
    and the claim would overwrite it: both engines refuse the plain write, so breaking the rule
    fails on LMDB too, where it would not race."""
    writer = engine.writer
    with pytest.raises(Unclaimed):
        await writer.write([("accounts", EMAIL, b"acc_1")])
    with pytest.raises(Unclaimed):  # asserting another key is no assertion of this one
        await writer.write([expect_op("accounts", b"a:acc_1", None), ("accounts", EMAIL, b"acc_1")])
    assert await engine.reads.get_raw(EMAIL, db="accounts") is None
    # in a group, the ticket that breaks the rule fails alone
    plain = writer.submit([("meta", sealcheck.CANARY_KEY, b"plain")])
    claim = writer.submit(
        [expect_op("meta", sealcheck.CANARY_KEY, None), ("meta", sealcheck.CANARY_KEY, b"mine")]
    )
    with pytest.raises(Unclaimed):
        await plain.wait()
    await claim.wait()
    assert await engine.reads.get_raw(sealcheck.CANARY_KEY, db="meta") == b"mine"
    # a delete needs no assertion (the row is there to lock), nor does a key never claimed
    await writer.write([("meta", sealcheck.CANARY_KEY, None), ("accounts", b"a:acc_1", b"{}")])
    assert await engine.reads.get_raw(sealcheck.CANARY_KEY, db="meta") is None


def test_the_claim_rule_names_every_key_the_node_claims() -> None:
    assert claimed("accounts", accounts.email_key("Someone@Example.com"))
    assert claimed("meta", sealcheck.CANARY_KEY) and claimed("meta", signcheck.KEY_ID)
    assert not claimed("accounts", accounts.account_key("acc_1"))
    assert not claimed("records", EMAIL)  # the same bytes in another database


async def test_in_one_group_a_ticket_sees_the_writes_of_those_before_it(engine: OpenEngine) -> None:
    writer = engine.writer
    await writer.write([("accounts", b"a:acc_1", b"v1")])
    commits = writer.stats.commits
    first = writer.submit(
        [expect_op("accounts", b"a:acc_1", b"v1"), ("accounts", b"a:acc_1", b"v2")]
    )
    second = writer.submit([expect_op("accounts", b"a:acc_1", b"v1"), ("accounts", b"s:x", b"s")])
    third = writer.submit([expect_op("accounts", b"a:acc_1", b"v2"), ("accounts", b"s:y", b"s")])
    await first.wait()
    with pytest.raises(Contended):
        await second.wait()
    await third.wait()
    assert await engine.reads.get_raw(b"a:acc_1", db="accounts") == b"v2"
    assert await engine.reads.get_raw(b"s:x", db="accounts") is None
    assert await engine.reads.get_raw(b"s:y", db="accounts") == b"s"
    # the ticket that lost its race left the group; the two others committed together
    assert writer.stats.commits == commits + 1


async def test_two_stores_racing_for_one_key_take_it_once(pg_url: str) -> None:
    require_psycopg()
    from edge.store.postgres.store import open_postgres_store

    outcomes: list[str] = []

    async def take(writer: StoreWriter, who: str) -> None:
        try:
            await writer.write(
                [expect_op("accounts", EMAIL, None), ("accounts", EMAIL, who.encode())]
            )
        except Contended:
            outcomes.append("refused")
        else:
            outcomes.append(who)

    async def spend(writer: StoreWriter, who: str) -> None:
        raw = await stores[0].get_raw(b"l:challenge", db="accounts")
        if raw is None:  # spent already, as read
            outcomes.append("refused")
            return
        try:
            await writer.write(
                [
                    expect_op("accounts", b"l:challenge", raw),
                    ("accounts", b"l:challenge", None),
                    ("accounts", f"s:{who}".encode(), b"session"),
                ]
            )
        except Contended:
            outcomes.append("refused")
        else:
            outcomes.append(who)

    async with (
        open_postgres_store(pg_url) as one,
        open_postgres_store(pg_url) as two,
        open_writer(one) as writer_one,
        open_writer(two) as writer_two,
    ):
        stores = (one, two)
        async with trio.open_nursery() as nursery:
            for n in range(20):
                nursery.start_soon(take, (writer_one, writer_two)[n % 2], f"acc_{n}")
        taken = [who for who in outcomes if who != "refused"]
        assert len(taken) == 1 and outcomes.count("refused") == 19
        assert await one.get_raw(EMAIL, db="accounts") == taken[0].encode()

        # many keys, each raced by one ticket of each store, their commits overlapping
        winners: dict[bytes, int] = {}

        async def claim(writer: StoreWriter, key: bytes) -> None:
            try:
                await writer.write([expect_op("accounts", key, None), ("accounts", key, b"")])
            except Contended:
                return
            winners[key] = winners.get(key, 0) + 1

        for round_ in range(40):
            async with trio.open_nursery() as nursery:
                for n in range(5):
                    key = f"e:{round_}-{n}@example.com".encode()
                    nursery.start_soon(claim, writer_one, key)
                    nursery.start_soon(claim, writer_two, key)
        assert len(winners) == 200 and set(winners.values()) == {1}

        # a present row spent by many at once: one session, whoever wins
        outcomes.clear()
        await writer_one.write([("accounts", b"l:challenge", b"pending")])
        async with trio.open_nursery() as nursery:
            for n in range(20):
                nursery.start_soon(spend, (writer_one, writer_two)[n % 2], f"tok_{n}")
        spent = [who for who in outcomes if who != "refused"]
        assert len(spent) == 1, outcomes
        sessions = await one.scan(b"s:", db="accounts")
        assert [key for key, _ in sessions] == [f"s:{spent[0]}".encode()]
