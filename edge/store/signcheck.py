"""Does this node sign with the cluster's key? (cluster mode)

Every node of a cluster must sign public-info answers and the button script with one key: the
script carries the public half, and a merchant's page pins the script by its integrity hash, so
a node with a key of its own would serve a script that page refuses. The shared store keeps the
key's id (its RFC 7638 thumbprint, from the public half only: never the private key) in its
``meta`` database, claimed by the first node that starts on it; a node whose key has another id
refuses to start with one line.

``edge cluster signing-key --forget`` removes the id, for a cluster that lost its key: the next
node to start then claims its own.
"""

from __future__ import annotations

from edge.config import ConfigError
from edge.store.engine import Engine
from edge.store.sealcheck import claim
from edge.store.writer import StoreWriter

KEY_ID = b"signing-key-id"


class WrongSigningKey(ConfigError):
    """This node's signing key is not the one the cluster's other nodes sign with."""


async def check(store: Engine, writer: StoreWriter, kid: str) -> None:
    """Raise ``WrongSigningKey`` unless ``kid`` is the cluster's key id (claiming it for the
    cluster when the store has none yet)."""
    held = await store.get_raw(KEY_ID, db="meta")
    if held is None:
        held = await claim(store, writer, KEY_ID, kid.encode("ascii"))
    if held != kid.encode("ascii"):
        raise WrongSigningKey(
            f"this node's signing key (key id {kid}) is not the cluster's (key id "
            f"{held.decode('ascii', 'replace')}): give every node the cluster's key "
            "(EDGE_SIGNING_KEY, or signing-key.pem in the data dir); see docs/cluster.md"
        )
