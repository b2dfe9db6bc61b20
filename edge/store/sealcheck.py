"""Does the node's sealing key open this store's sealed secrets? (CONTRACT 10)

A store sealed with another key (a restore without its ``secret.key``, a mistyped
``EDGE_SECRET_KEY``) would answer ``500`` for every project with a provider set up. So the store
keeps a sealed canary in its ``meta`` database, written by the first node that opens it, and
every start opens the canary first: a key that cannot open it stops the start with one line.

The first write is a ``claim``: a write that asserts the key has no value yet
(``engine.expect_op``; the key is one of ``engine.CLAIMED``, so no write gives it a value
without asserting it), so it leaves a canary already there alone and answers the one that is
there, which the node then opens like any other. Two nodes starting together on an empty shared
store (cluster mode) both find no canary; the second's claim then answers the first's, so a node
with another key refuses instead of each keeping a canary of its own.
"""

from __future__ import annotations

from edge.sealing import Sealer, SealError
from edge.store.engine import Contended, Engine, expect_op
from edge.store.writer import StoreWriter

CANARY_KEY = b"seal-canary"
CANARY_PLACE = "edge/seal-canary"


class WrongSealingKey(Exception):
    """The node's sealing key does not open the store's secrets."""


async def claim(store: Engine, writer: StoreWriter, key: bytes, value: bytes) -> bytes:
    """``value`` at ``key`` of the ``meta`` database unless a value is there already; the value
    there afterwards, whichever node wrote it."""
    while True:
        try:
            await writer.write([expect_op("meta", key, None), ("meta", key, value)])
            return value
        except Contended:
            held = await store.get_raw(key, db="meta")
            if held is not None:  # else removed since (edge cluster signing-key --forget)
                return held


async def check(store: Engine, writer: StoreWriter, sealer: Sealer) -> None:
    """Raise ``WrongSealingKey`` if the key cannot open the store's canary (leaving one first
    when there is none)."""
    canary = await store.get_raw(CANARY_KEY, db="meta")
    if canary is None:
        canary = await claim(store, writer, CANARY_KEY, sealer.seal("edge", CANARY_PLACE))
    try:
        sealer.open(canary, CANARY_PLACE)
    except SealError:
        raise WrongSealingKey(
            "the sealing key (EDGE_SECRET_KEY, or secret.key in the data dir) does not open "
            "this store's secrets: start with the key the store was written with"
        ) from None
