"""Does the node's sealing key open this store's sealed secrets? (CONTRACT 10)

A store sealed with another key (a restore without its ``secret.key``, a mistyped
``EDGE_SECRET_KEY``) would answer ``500`` for every project with a provider set up. So the store
keeps a sealed canary in its ``meta`` database, written by the first node that opens it, and
every start opens the canary first: a key that cannot open it stops the start with one line.
"""

from __future__ import annotations

from edge.sealing import Sealer, SealError
from edge.store.engine import Engine
from edge.store.writer import Op

CANARY_KEY = b"seal-canary"
CANARY_PLACE = "edge/seal-canary"


class WrongSealingKey(Exception):
    """The node's sealing key does not open the store's secrets."""


async def check(store: Engine, sealer: Sealer) -> list[Op]:
    """Raise ``WrongSealingKey`` if the key cannot open the store's canary; else the writes
    that leave one (none when it is there)."""
    canary = await store.get_raw(CANARY_KEY, db="meta")
    if canary is None:
        return [("meta", CANARY_KEY, sealer.seal("edge", CANARY_PLACE))]
    try:
        sealer.open(canary, CANARY_PLACE)
    except SealError:
        raise WrongSealingKey(
            "the sealing key (EDGE_SECRET_KEY, or secret.key in the data dir) does not open "
            "this store's secrets: start with the key the store was written with"
        ) from None
    return []
