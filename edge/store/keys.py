"""Key schema of the ``records`` database: ``project id | kind | rest``.

Project ids are fixed width (20 bytes), kinds one byte, and every id after them is fixed width or
NUL-terminated, so a ``set_range`` scan over ``project | kind`` walks exactly one project's
records of one kind, in id order (ULIDs sort by time as bytes).
"""

from __future__ import annotations

PROJECT_ID_LEN = 20

PROJECT = b"P"
TRANSACTION = b"T"
SUBSCRIPTION = b"S"
EVENT = b"E"
TX_HISTORY = b"H"  # tx id | evt id -> b"" : a transaction's events, in order
DEDUP = b"D"  # provider NUL provider event id -> evt id
REFERENCE = b"R"  # manual reference code -> tx id
PROVIDER_REF = b"X"  # provider NUL provider object id -> tx or sub id
WAITING = b"U"  # provider NUL provider object id -> unmatched evt ids naming it, space-separated
PROVIDER_OBJECT = b"O"  # provider NUL mode|product|price -> a provider object to reuse (a plan)
REJECTED = b"J"  # rejected webhook deliveries, by ulid
QUOTA = b"Q"  # period NUL mode -> count
IDEMPOTENCY = b"I"  # sha256(Idempotency-Key) -> first answer
IDEMPOTENCY_EXPIRY = b"W"  # expiry ms (16 digits) NUL key hash -> b"": oldest first, for purging


def _pid(project_id: str) -> bytes:
    raw = project_id.encode("ascii")
    if len(raw) != PROJECT_ID_LEN:
        raise ValueError(f"project id must be {PROJECT_ID_LEN} bytes: {project_id!r}")
    return raw


def prefix(project_id: str, kind: bytes) -> bytes:
    return _pid(project_id) + kind


def project(project_id: str) -> bytes:
    return prefix(project_id, PROJECT)


def record(project_id: str, kind: bytes, item_id: str) -> bytes:
    return prefix(project_id, kind) + item_id.encode("ascii")


def history(project_id: str, tx_id: str, evt_id: str = "") -> bytes:
    return prefix(project_id, TX_HISTORY) + tx_id.encode("ascii") + evt_id.encode("ascii")


def named(project_id: str, kind: bytes, namespace: str, name: str) -> bytes:
    return prefix(project_id, kind) + namespace.encode() + b"\x00" + name.encode()


def tx_owner(tx_id: str) -> bytes:
    """Key in the ``meta`` database: transaction id -> its project id."""
    return b"tx:" + tx_id.encode("ascii")


def item_id(key: bytes, project_id_len: int = PROJECT_ID_LEN) -> str:
    """The id part of a ``project | kind | id`` key."""
    return key[project_id_len + 1 :].decode("ascii")
