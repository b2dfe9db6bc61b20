"""Values are msgpack maps carrying a schema version under ``_v``.

A record written by a newer node than this one is refused rather than half-understood."""

from __future__ import annotations

from typing import Any

import msgpack

SCHEMA_VERSION = 1
_VERSION_KEY = "_v"


class SchemaError(Exception):
    pass


def pack(record: dict[str, Any]) -> bytes:
    return msgpack.packb({_VERSION_KEY: SCHEMA_VERSION, **record}, use_bin_type=True)


def unpack(raw: bytes) -> dict[str, Any]:
    record = msgpack.unpackb(raw, raw=False, strict_map_key=True)
    if not isinstance(record, dict):
        raise SchemaError("stored value is not a map")
    version = record.pop(_VERSION_KEY, None)
    if version != SCHEMA_VERSION:
        raise SchemaError(f"record schema {version!r}, this node reads {SCHEMA_VERSION}")
    return record
