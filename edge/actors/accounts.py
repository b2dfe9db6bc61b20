"""Accounts as the HTTP layer reads and changes them: an account, its sessions, its password
reset links and its logins that wait for a second factor (CONTRACT 4.7).

Reads see only what the writer has committed; every change is one durable write. A change
that must not race (an e-mail taken once, a code or link spent once) runs through ``guarded``:
its reads are remembered and its write asserts them (the store interface's
``engine.expect_op``), so of two nodes that read, then write the same rows, the later write
fails and its change runs again on what is there now, giving the answer it would have given
had it come second (``409 account_exists``, ``401 invalid_code``). ``ctx.accounts_lock`` still
serialises a node's own changes, so they do not lose races to each other.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from contextvars import ContextVar
from typing import Any, TypeVar

from edge.actors.context import NodeContext
from edge.domain.passwords import credentials_stamp
from edge.errors import Unavailable
from edge.store import accounts as rows
from edge.store.codec import unpack
from edge.store.engine import Contended, Op, Reader, expect_op

T = TypeVar("T")

digest = rows.digest
TRIES = 4  # a change loses a race only to another change of the same rows; rarely twice

# (database, key) -> the raw value a guarded change read there first
Reads = dict[tuple[str, bytes], bytes | None]
_READS: ContextVar[Reads | None] = ContextVar("account_reads", default=None)


async def guarded(ctx: NodeContext, change: Callable[[], Awaitable[T]]) -> T:
    """``change()``, as if no other node changed accounts meanwhile: its write commits only if
    every row it read is as it was read, else it runs again (at most ``TRIES`` times, then
    ``503 unavailable``, retryable)."""
    for _ in range(TRIES):
        async with ctx.accounts_lock:
            token = _READS.set({})
            try:
                return await change()
            except Contended:
                continue
            finally:
                _READS.reset(token)
    raise Unavailable("unavailable", "Accounts are changing on another node: retry.")


class _Remembered:
    """The store as a guarded change reads it: every point read is remembered (a scan is not:
    what a change scans for, it ends by the credentials stamp, not by the scan)."""

    def __init__(self, reader: Reader, reads: Reads) -> None:
        self._reader = reader
        self._reads = reads

    async def get_raw(self, key: bytes, db: str = "records") -> bytes | None:
        raw = await self._reader.get_raw(key, db)
        self._reads.setdefault((db, key), raw)
        return raw

    async def get(self, key: bytes, db: str = "records") -> dict[str, Any] | None:
        raw = await self.get_raw(key, db)
        return None if raw is None else unpack(raw)

    async def scan(self, prefix: bytes, **options: Any) -> list[tuple[bytes, bytes]]:
        return await self._reader.scan(prefix, **options)


def _reader(ctx: NodeContext) -> Reader:
    reads = _READS.get()
    return ctx.store if reads is None else _Remembered(ctx.store, reads)


async def _write(ctx: NodeContext, ops: Sequence[Op]) -> None:
    reads = _READS.get()
    if not reads:
        await ctx.writer.write(ops)
        return
    await ctx.writer.write([*(expect_op(db, k, raw) for (db, k), raw in reads.items()), *ops])
    for db, key, value in ops:  # a second write of the same change asserts what the first left
        if (db, key) in reads:
            reads[db, key] = value


def stamped(record: dict[str, Any], account: dict[str, Any]) -> dict[str, Any]:
    """A session, reset link or waiting login of ``account``, holding while its password does."""
    return {**record, "credentials": credentials_stamp(account["passwordHash"])}


def credentials_hold(record: dict[str, Any], account: dict[str, Any] | None) -> bool:
    """Whether the password ``record`` was made under is still ``account``'s. A record without
    a stamp (the operator's own session, or one made before stamps) holds."""
    stamp = record.get("credentials")
    if stamp is None:
        return True
    return account is not None and stamp == credentials_stamp(account["passwordHash"])


async def get(ctx: NodeContext, account_id: str) -> dict[str, Any] | None:
    return await rows.account(_reader(ctx), account_id)


async def by_email(ctx: NodeContext, email: str) -> dict[str, Any] | None:
    return await rows.account_by_email(_reader(ctx), email)


async def every(ctx: NodeContext) -> list[dict[str, Any]]:
    return await rows.all_accounts(ctx.store)


async def owns(ctx: NodeContext, account_id: str, project_id: str) -> bool:
    return await rows.owns(ctx.store, account_id, project_id)


async def owned_projects(ctx: NodeContext, account_id: str) -> list[str]:
    return await rows.owned_projects(ctx.store, account_id)


async def session_as_stored(ctx: NodeContext, token: str) -> tuple[dict[str, Any], bytes] | None:
    """A session and its stored bytes, which a write over it asserts (``put_session_soon``)."""
    raw = await _reader(ctx).get_raw(rows.session_key(token), db=rows.DB)
    return None if raw is None else (unpack(raw), raw)


async def session(ctx: NodeContext, token: str) -> dict[str, Any] | None:
    return await rows.session(_reader(ctx), token)


async def reset_link(ctx: NodeContext, token: str) -> dict[str, Any] | None:
    return await rows.reset_link(_reader(ctx), token)


async def challenge(ctx: NodeContext, token: str) -> dict[str, Any] | None:
    return await rows.challenge(_reader(ctx), token)


async def create(ctx: NodeContext, account: dict[str, Any]) -> None:
    """Store a new account and the e-mail that finds it."""
    await _write(ctx, rows.new_account_ops(account))


async def save(ctx: NodeContext, account: dict[str, Any], *, spent: str | None = None) -> None:
    """Store a changed account (its e-mail stays the same); ``spent``: a login challenge ended
    in the same write, so a code is never taken without its login being used up."""
    ops = rows.account_ops(account)
    if spent is not None:
        ops += rows.challenge_ops(spent, None)
    await _write(ctx, ops)


async def put_session(ctx: NodeContext, token: str, record: dict[str, Any] | None) -> None:
    """Store a session, or end it (``record`` None)."""
    await _write(ctx, rows.session_ops(token, record))


def put_session_soon(ctx: NodeContext, token: str, record: dict[str, Any], was: bytes) -> None:
    """Queue a session's new expiry without waiting for it: a sliding expiry that is lost in
    a crash only shortens the session. Written only over the record it extends (``was``), so
    a logout or a password reset committed meanwhile, on any node, is never undone."""
    key = rows.session_key(token)
    ctx.writer.submit([expect_op(rows.DB, key, was), *rows.session_ops(token, record)])


async def put_challenge(ctx: NodeContext, token: str, record: dict[str, Any] | None) -> None:
    """Store a login's pending second step, or end it (``record`` None)."""
    await _write(ctx, rows.challenge_ops(token, record))


async def put_reset_link(ctx: NodeContext, token: str, record: dict[str, Any]) -> None:
    await _write(ctx, rows.reset_ops(token, record))


async def set_password(ctx: NodeContext, account: dict[str, Any], password_hash: str) -> None:
    """Give ``account`` a new password hash and, in the same write, delete every session,
    reset link and waiting login it has. One made meanwhile on another node escapes the scan,
    but not the credentials stamp it carries, which no longer matches (``credentials_hold``)."""
    ops: list[Op] = rows.account_ops({**account, "passwordHash": password_hash})
    for kind in (rows.SESSIONS, rows.RESETS, rows.CHALLENGES):
        ops += [(rows.DB, key, None) for key in await rows.keys_of(ctx.store, kind, account["id"])]
    await _write(ctx, ops)
