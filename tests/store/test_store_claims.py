"""What every node on a shared store must agree on (the sealing canary, the signing key's id) is
written first with a claim that leaves a value already there alone: two nodes starting together
on an empty PostgreSQL store keep one value, and the node whose key does not match it refuses,
also when it found the store empty a moment before (real PostgreSQL)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import trio
from support.postgres import require_psycopg

require_psycopg()

from edge.sealing import Sealer  # noqa: E402
from edge.store import sealcheck, signcheck  # noqa: E402
from edge.store.postgres.store import PostgresStore, open_postgres_store  # noqa: E402
from edge.store.sealcheck import claim  # noqa: E402
from edge.store.writer import StoreWriter, open_writer  # noqa: E402

KEY_A, KEY_B = bytes(range(32)), bytes(range(1, 33))


@pytest.fixture
async def node(pg_url: str) -> AsyncIterator[tuple[PostgresStore, StoreWriter]]:
    async with open_postgres_store(pg_url) as store, open_writer(store) as writer:
        yield store, writer


async def test_claims_made_at_once_keep_one_value(pg_url, node) -> None:
    async with open_postgres_store(pg_url) as other, open_writer(other) as other_writer:
        nodes = {"one": node, "other": (other, other_writer)}
        for round_ in range(20):
            key = f"claimed-{round_}".encode()
            got: dict[str, bytes] = {}

            async with trio.open_nursery() as nursery:
                for name in nodes:
                    nursery.start_soon(_claim, got, name, *nodes[name], key)
            assert got["one"] == got["other"] == await other.get_raw(key, db="meta")


async def _claim(
    got: dict[str, bytes], name: str, store: PostgresStore, writer: StoreWriter, key: bytes
) -> None:
    got[name] = await claim(store, writer, key, name.encode())


async def test_a_node_that_loses_the_race_to_another_sealing_key_refuses(node) -> None:
    store, writer = node
    others = Sealer(KEY_A).seal("edge", sealcheck.CANARY_PLACE)
    # this node found no canary; the other node's landed before this node's claim
    await claim(store, writer, sealcheck.CANARY_KEY, others)
    canary = Sealer(KEY_B).seal("edge", sealcheck.CANARY_PLACE)
    assert await claim(store, writer, sealcheck.CANARY_KEY, canary) == others
    with pytest.raises(sealcheck.WrongSealingKey):
        await sealcheck.check(store, writer, Sealer(KEY_B))
    await sealcheck.check(store, writer, Sealer(KEY_A))  # the winner's key opens it


async def test_a_node_that_loses_the_race_to_another_signing_key_refuses(node) -> None:
    store, writer = node
    await claim(store, writer, signcheck.KEY_ID, b"the-other-nodes-key-id")
    with pytest.raises(signcheck.WrongSigningKey) as refused:
        await signcheck.check(store, writer, "this-nodes-key-id")
    said = str(refused.value)
    assert "this-nodes-key-id" in said and "the-other-nodes-key-id" in said
    await signcheck.check(store, writer, "the-other-nodes-key-id")


async def test_a_claim_made_after_the_value_was_forgotten_writes_its_own(node) -> None:
    store, writer = node
    assert await claim(store, writer, signcheck.KEY_ID, b"first") == b"first"
    await writer.write([("meta", signcheck.KEY_ID, None)])  # edge cluster signing-key --forget
    assert await claim(store, writer, signcheck.KEY_ID, b"second") == b"second"
