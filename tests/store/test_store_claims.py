"""What every node on a shared store must agree on (the sealing canary, the signing key's id) is
written first with a claim that leaves a value already there alone: two nodes starting together
on an empty PostgreSQL store keep one value, and the node whose key does not match it refuses,
also when it found the store empty a moment before (real PostgreSQL)."""

from __future__ import annotations

import pytest
import trio
from support.postgres import require_psycopg

require_psycopg()

from edge.sealing import Sealer  # noqa: E402
from edge.store import sealcheck, signcheck  # noqa: E402
from edge.store.postgres import PostgresStore, insert_absent, open_postgres_store  # noqa: E402
from edge.store.sealcheck import Claim  # noqa: E402

KEY_A, KEY_B = bytes(range(32)), bytes(range(1, 33))


async def test_claims_made_at_once_keep_one_value(pg_url) -> None:
    async with open_postgres_store(pg_url) as one, open_postgres_store(pg_url) as other:
        for round_ in range(20):
            key = f"claimed-{round_}".encode()
            got: dict[str, bytes] = {}

            async with trio.open_nursery() as nursery:
                nursery.start_soon(_claim, got, "one", one, key)
                nursery.start_soon(_claim, got, "other", other, key)
            assert got["one"] == got["other"] == await one.get_raw(key, db="meta")


async def _claim(got: dict[str, bytes], name: str, store: PostgresStore, key: bytes) -> None:
    got[name] = await insert_absent(store, key, name.encode())


async def test_a_node_that_loses_the_race_to_another_sealing_key_refuses(pg_url) -> None:
    async with open_postgres_store(pg_url) as store:
        others = Sealer(KEY_A).seal("edge", sealcheck.CANARY_PLACE)
        raced = _raced(store, others)
        with pytest.raises(sealcheck.WrongSealingKey):
            await sealcheck.check(store, Sealer(KEY_B), raced)
        await sealcheck.check(store, Sealer(KEY_A), raced)  # the winner's key opens it


async def test_a_node_that_loses_the_race_to_another_signing_key_refuses(pg_url) -> None:
    async with open_postgres_store(pg_url) as store:
        raced = _raced(store, b"the-other-nodes-key-id")
        with pytest.raises(signcheck.WrongSigningKey) as refused:
            await signcheck.check(store, "this-nodes-key-id", raced)
        said = str(refused.value)
        assert "this-nodes-key-id" in said and "the-other-nodes-key-id" in said
        await signcheck.check(store, "the-other-nodes-key-id", raced)


def _raced(store: PostgresStore, others: bytes) -> Claim:
    """This node's claim, made after the other node's (``others``) landed."""

    async def claim(key: bytes, value: bytes) -> bytes:
        await insert_absent(store, key, others)
        return await insert_absent(store, key, value)

    return claim
