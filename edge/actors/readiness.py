"""Whether the node can take work: the store is open and the writer commits. A probe write
(one key of the ``meta`` database) must become durable within ``PROBE_TIMEOUT_S``.

A store that commits a small probe may still refuse real work: a full map or disk leaves a few
pages free for a while (LMDB reuses the pages each commit frees). So the probe also claims
``ROOM`` bytes in the same transaction, as ``ROOM_PAGES`` values that it deletes again before
the commit (the map must have room for them, nothing stays), and the disk under an LMDB store
must have ``ROOM`` bytes free (a PostgreSQL store's disk is its server's, out of this node's
sight: its probe write is the whole check).
"""

from __future__ import annotations

import struct

import trio

from edge.actors.context import NodeContext
from edge.store.engine import Op

PROBE_KEY = b"ready-probe"
ROOM_PAGES = 256
ROOM = ROOM_PAGES * 1024  # what the store must still take for the node to be ready
PROBE_TIMEOUT_S = 5.0


async def store_commits(ctx: NodeContext) -> bool:
    local_disk = ctx.store.features.local_disk
    if local_disk and (ctx.store.disk_room() or 0) < ROOM:
        return False
    with trio.move_on_after(PROBE_TIMEOUT_S):
        try:
            await ctx.writer.write(_probe(ctx.clock_ms(), claim_room=local_disk))
        except Exception:  # the store refused the write: not ready, and say so
            return False
        return True
    return False


def _probe(now_ms: int, *, claim_room: bool) -> list[Op]:
    """The probe's writes: its time, and (a store whose room is this node's: LMDB's map)
    ``ROOM`` bytes claimed and given back. On PostgreSQL a claim would cost every probe of every
    node a 256-key statement and tell nothing: the server's room is its own."""
    room = [(b"ready-room:%03d" % n) for n in range(ROOM_PAGES)] if claim_room else []
    return [
        ("meta", PROBE_KEY, struct.pack(">Q", now_ms)),
        *(("meta", key, bytes(ROOM // ROOM_PAGES)) for key in room),
        *(("meta", key, None) for key in room),
    ]
