"""Project keys by their SHA-256, with the recent hits kept in memory.

Only hits are kept (an attacker's guesses cannot fill it) and the cache is bounded. A revoke
forgets the key before its commit is submitted, so from then on every lookup reads the store,
and a revoked key stops working the moment the revocation is acknowledged.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass

from edge.domain import ids
from edge.store.codec import unpack
from edge.store.engine import Engine


@dataclass(frozen=True)
class KeyInfo:
    project_id: str
    key_id: str
    mode: str


class KeyIndex:
    def __init__(self, store: Engine, size: int = 10_000, *, shared: bool = False) -> None:
        self._store = store
        # shared: other nodes revoke keys in the same store (cluster mode), and a hit kept
        # here would outlive their revoke; every lookup reads the store then
        self._size = 0 if shared else size
        self._hits: dict[bytes, KeyInfo] = {}
        self._forgets = 0

    async def lookup(self, key: str) -> KeyInfo | None:
        digest = ids.hash_api_key(key)
        info = self._hits.get(digest)
        if info is not None:
            return info
        forgets = self._forgets
        raw = await self._store.get_raw(digest, db="apikeys")
        # The index is keyed by the digest; this compare keeps the check constant-time even if a
        # later change looks keys up some other way.
        if raw is None or not hmac.compare_digest(digest, ids.hash_api_key(key)):
            return None
        entry = unpack(raw)
        info = KeyInfo(entry["projectId"], entry["keyId"], entry["mode"])
        # a read that gave way (PostgreSQL) may predate a revoke forgotten meanwhile: its
        # answer stands for this lookup but is not kept
        if forgets == self._forgets and self._size:
            if len(self._hits) >= self._size:
                self._hits.clear()
            self._hits[digest] = info
        return info

    def forget(self, digest: bytes) -> None:
        self._forgets += 1
        self._hits.pop(digest, None)
