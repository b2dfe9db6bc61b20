"""The ``accounts`` database (CONTRACT 4.7): accounts, the e-mail that finds each, sessions,
and which projects each account owns.

Keys: ``a:<acc id>`` the account; ``e:<e-mail, lower case>`` its id; ``s:<SHA-256 of the
session token>`` a session; ``p:<acc id>:<project id>`` ownership (empty value);
``r:<SHA-256 of a reset token>`` a password reset link; ``l:<SHA-256 of a challenge>`` a login
that waits for its second factor. Nothing here holds a password, a token or a one-time code in
the clear: the account keeps its scrypt hash (``edge.domain.passwords``), its TOTP secret sealed
(``edge.sealing``) and the SHA-256 of its recovery codes; a session, a reset link and a
challenge are found by their token's SHA-256, and a session keeps only the SHA-256 of its CSRF
token.
"""

from __future__ import annotations

import hashlib
from typing import Any

from edge.store.codec import pack, unpack
from edge.store.engine import Op, Reader

DB = "accounts"
SESSIONS, RESETS, CHALLENGES = b"s:", b"r:", b"l:"


def account_key(account_id: str) -> bytes:
    return b"a:" + account_id.encode("ascii")


def email_key(email: str) -> bytes:
    return b"e:" + email.lower().encode("utf-8")


def session_key(token: str) -> bytes:
    return SESSIONS + digest(token)


def reset_key(token: str) -> bytes:
    return RESETS + digest(token)


def challenge_key(token: str) -> bytes:
    return CHALLENGES + digest(token)


def owner_key(account_id: str, project_id: str = "") -> bytes:
    return b"p:" + account_id.encode("ascii") + b":" + project_id.encode("ascii")


def digest(secret: str) -> bytes:
    """What is kept of a session or CSRF token: its SHA-256 (256 random bits need no salt)."""
    return hashlib.sha256(secret.encode("utf-8")).digest()


async def account(store: Reader, account_id: str) -> dict[str, Any] | None:
    return await store.get(account_key(account_id), db=DB)


async def all_accounts(store: Reader, limit: int = 1000) -> list[dict[str, Any]]:
    """Every account, in id order (at most ``limit``)."""
    return [unpack(raw) for _, raw in await store.scan(b"a:", db=DB, limit=limit)]


async def account_by_email(store: Reader, email: str) -> dict[str, Any] | None:
    account_id = await store.get_raw(email_key(email), db=DB)
    if not account_id:
        return None
    return await store.get(account_key(account_id.decode("ascii")), db=DB)


async def session(store: Reader, token: str) -> dict[str, Any] | None:
    return await store.get(session_key(token), db=DB)


async def reset_link(store: Reader, token: str) -> dict[str, Any] | None:
    return await store.get(reset_key(token), db=DB)


async def challenge(store: Reader, token: str) -> dict[str, Any] | None:
    return await store.get(challenge_key(token), db=DB)


async def keys_of(store: Reader, kind: bytes, account_id: str) -> list[bytes]:
    """The keys of ``kind`` (``SESSIONS``, ``RESETS``, ``CHALLENGES``) that
    belong to ``account_id``: a scan of them all, for the rare change that ends every one of
    an account's (a password reset)."""
    return [
        key
        for key, raw in await store.scan(kind, db=DB)
        if unpack(raw).get("accountId") == account_id
    ]


async def owned_projects(store: Reader, account_id: str) -> list[str]:
    prefix = owner_key(account_id)
    return [key[len(prefix) :].decode("ascii") for key, _ in await store.scan(prefix, db=DB)]


async def owns(store: Reader, account_id: str, project_id: str) -> bool:
    return await store.get_raw(owner_key(account_id, project_id), db=DB) is not None


def new_account_ops(account: dict[str, Any]) -> list[Op]:
    return [
        (DB, account_key(account["id"]), pack(account)),
        (DB, email_key(account["email"]), account["id"].encode("ascii")),
    ]


def account_ops(account: dict[str, Any]) -> list[Op]:
    """Write a changed account (its e-mail stays the same)."""
    return [(DB, account_key(account["id"]), pack(account))]


def reset_ops(token: str, record: dict[str, Any] | None) -> list[Op]:
    """Write a reset link, or delete it (``record`` None)."""
    return [(DB, reset_key(token), None if record is None else pack(record))]


def challenge_ops(token: str, record: dict[str, Any] | None) -> list[Op]:
    """Write a login's pending second step, or delete it (``record`` None)."""
    return [(DB, challenge_key(token), None if record is None else pack(record))]


def session_ops(token: str, record: dict[str, Any] | None) -> list[Op]:
    """Write a session, or delete it (``record`` None)."""
    return [(DB, session_key(token), None if record is None else pack(record))]


def ownership_ops(account_id: str, project_id: str) -> list[Op]:
    return [(DB, owner_key(account_id, project_id), b"")]
