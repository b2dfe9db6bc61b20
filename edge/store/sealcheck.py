"""Does the node's sealing key open this store's sealed secrets? (CONTRACT 10)

A store sealed with another key (a restore without its ``secret.key``, a mistyped
``EDGE_SECRET_KEY``) would answer ``500`` for every project with a provider set up. So the store
keeps a sealed canary in its ``meta`` database, written by the first node that opens it, and
every start opens the canary first: a key that cannot open it stops the start with one line.

The first write is a ``Claim``: it leaves a canary already there alone and answers the one that
is there, which the node then opens like any other. Two nodes starting together on an empty
shared store (cluster mode) both find no canary; the second's claim then answers the first's,
so a node with another key refuses instead of each keeping a canary of its own.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from edge.sealing import Sealer, SealError
from edge.store.engine import Engine

CANARY_KEY = b"seal-canary"
CANARY_PLACE = "edge/seal-canary"

# ``claim(key, value)``: ``value`` stored at ``key`` of the ``meta`` database unless a value is
# there already; the value there afterwards, whichever node wrote it
Claim = Callable[[bytes, bytes], Awaitable[bytes]]


class WrongSealingKey(Exception):
    """The node's sealing key does not open the store's secrets."""


async def check(store: Engine, sealer: Sealer, claim: Claim) -> None:
    """Raise ``WrongSealingKey`` if the key cannot open the store's canary (leaving one first
    when there is none)."""
    canary = await store.get_raw(CANARY_KEY, db="meta")
    if canary is None:
        canary = await claim(CANARY_KEY, sealer.seal("edge", CANARY_PLACE))
    try:
        sealer.open(canary, CANARY_PLACE)
    except SealError:
        raise WrongSealingKey(
            "the sealing key (EDGE_SECRET_KEY, or secret.key in the data dir) does not open "
            "this store's secrets: start with the key the store was written with"
        ) from None
