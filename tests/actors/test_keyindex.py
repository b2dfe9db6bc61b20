"""The key index (edge.actors.keyindex): a hit is kept and served from memory, and a read that
gives way (as PostgreSQL's do) across a forget, a revoke's, is answered but not kept."""

from __future__ import annotations

import trio

from edge.actors.keyindex import KeyIndex, KeyInfo
from edge.domain import ids
from edge.store.codec import pack

KEY = ids.new_api_key("live")
INFO = KeyInfo("prj_0000000000000000", "key_1", "live")


class GivingWay:
    """An engine whose reads of the key index wait for ``release``, counted in ``reads``."""

    def __init__(self) -> None:
        self.reads = 0
        self.reading = trio.Event()
        self.release = trio.Event()

    async def get_raw(self, key: bytes, db: str = "records") -> bytes | None:
        assert (key, db) == (ids.hash_api_key(KEY), "apikeys")
        self.reads += 1
        self.reading.set()
        await self.release.wait()
        return pack({"projectId": INFO.project_id, "keyId": INFO.key_id, "mode": INFO.mode})


async def test_a_hit_is_read_once_then_served_from_memory() -> None:
    engine = GivingWay()
    engine.release.set()
    index = KeyIndex(engine)  # type: ignore[arg-type]
    assert await index.lookup(KEY) == INFO
    assert await index.lookup(KEY) == INFO
    assert engine.reads == 1


async def test_a_read_under_way_when_its_key_is_forgotten_is_not_kept() -> None:
    engine = GivingWay()
    index = KeyIndex(engine)  # type: ignore[arg-type]
    found: list[KeyInfo | None] = []

    async def look() -> None:
        found.append(await index.lookup(KEY))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(look)
        await engine.reading.wait()
        index.forget(ids.hash_api_key(KEY))  # a revoke, while the read is under way
        engine.release.set()
    assert found == [INFO]  # the read began before the revoke: its answer stands
    await index.lookup(KEY)
    assert engine.reads == 2  # but it was not kept: the next lookup reads the store again
