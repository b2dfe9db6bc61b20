"""Accounts as the HTTP layer reads and changes them: an account, its sessions, its password
reset links and its logins that wait for a second factor (CONTRACT 4.7).

Reads see only what the writer has committed; every change is one durable write. Checks that
must not race (an e-mail taken once, a code or link spent once) hold ``ctx.accounts_lock``
around a read here and the write that follows it.
"""

from __future__ import annotations

from typing import Any

from edge.actors.context import NodeContext
from edge.store import accounts as rows
from edge.store.writer import Op

digest = rows.digest


async def get(ctx: NodeContext, account_id: str) -> dict[str, Any] | None:
    return await rows.account(ctx.store, account_id)


async def by_email(ctx: NodeContext, email: str) -> dict[str, Any] | None:
    return await rows.account_by_email(ctx.store, email)


async def every(ctx: NodeContext) -> list[dict[str, Any]]:
    return await rows.all_accounts(ctx.store)


async def is_operator(ctx: NodeContext, account_id: str) -> bool:
    return await rows.is_operator(ctx.store, account_id)


async def owns(ctx: NodeContext, account_id: str, project_id: str) -> bool:
    return await rows.owns(ctx.store, account_id, project_id)


async def owned_projects(ctx: NodeContext, account_id: str) -> list[str]:
    return await rows.owned_projects(ctx.store, account_id)


async def session(ctx: NodeContext, token: str) -> dict[str, Any] | None:
    return await rows.session(ctx.store, token)


async def reset_link(ctx: NodeContext, token: str) -> dict[str, Any] | None:
    return await rows.reset_link(ctx.store, token)


async def challenge(ctx: NodeContext, token: str) -> dict[str, Any] | None:
    return await rows.challenge(ctx.store, token)


async def create(ctx: NodeContext, account: dict[str, Any]) -> None:
    """Store a new account and the e-mail that finds it."""
    await ctx.writer.write(rows.new_account_ops(account))


async def save(ctx: NodeContext, account: dict[str, Any], *, spent: str | None = None) -> None:
    """Store a changed account (its e-mail stays the same); ``spent``: a login challenge ended
    in the same write, so a code is never taken without its login being used up."""
    ops = rows.account_ops(account)
    if spent is not None:
        ops += rows.challenge_ops(spent, None)
    await ctx.writer.write(ops)


async def put_session(ctx: NodeContext, token: str, record: dict[str, Any] | None) -> None:
    """Store a session, or end it (``record`` None)."""
    await ctx.writer.write(rows.session_ops(token, record))


def put_session_soon(ctx: NodeContext, token: str, record: dict[str, Any]) -> None:
    """Queue a session's new expiry without waiting for it: a sliding expiry that is lost in
    a crash only shortens the session."""
    ctx.writer.submit(rows.session_ops(token, record))


async def put_challenge(ctx: NodeContext, token: str, record: dict[str, Any] | None) -> None:
    """Store a login's pending second step, or end it (``record`` None)."""
    await ctx.writer.write(rows.challenge_ops(token, record))


async def put_reset_link(ctx: NodeContext, token: str, record: dict[str, Any]) -> None:
    await ctx.writer.write(rows.reset_ops(token, record))


async def set_password(ctx: NodeContext, account: dict[str, Any], password_hash: str) -> None:
    """Give ``account`` a new password hash and, in the same write, end every session, reset
    link and waiting login it has: whoever knew the old password is out."""
    ops: list[Op] = rows.account_ops({**account, "passwordHash": password_hash})
    for kind in (rows.SESSIONS, rows.RESETS, rows.CHALLENGES):
        ops += [(rows.DB, key, None) for key in await rows.keys_of(ctx.store, kind, account["id"])]
    await ctx.writer.write(ops)
