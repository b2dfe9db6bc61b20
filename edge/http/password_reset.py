"""Password reset (docs/api.md): a one-time link to set a new password, valid for an hour and
kept only as the SHA-256 of its token; using it ends every session of the account.

Who gets a link: the operator, for any account (``edge account reset-link EMAIL``, through
``edge.http.operator_accounts``), or, on a node with ``EDGE_SMTP_URL``, whoever asks with an
e-mail address (``POST /api/accounts/password-reset``, the dashboard's "Forgot your
password?"), by e-mail to that address. That answer is the same whether an account has the
address or not, and it is sent before the account is even looked up: the lookup, the link and
the e-mail happen after, in the background, so neither the words nor the time of the answer
tell.
"""

from __future__ import annotations

import logging
import secrets
import smtplib
from typing import Any
from urllib.parse import urlencode

from quart import Blueprint, Response

from edge.actors import accounts
from edge.actors.context import NodeContext
from edge.domain.errors import InvalidInput
from edge.errors import Forbidden, NotFound
from edge.http import sessions
from edge.http.accounts import email_of, hash_new_password, password_of
from edge.http.bodies import only
from edge.http.clients import client_ip
from edge.http.context import limited, node
from edge.http.jsonio import NO_STORE, json_response, read_json_object

log = logging.getLogger("edge.accounts")
blueprint = Blueprint("password_reset", __name__)

RESET_TTL_MS = 3_600_000
LINK_PATH = "/dashboard/reset"
REQUESTED = (
    "If an account has this e-mail address, a link to set a new password is on its way to it. "
    "The link works once, for an hour."
)


async def new_reset_link(ctx: NodeContext, account: dict[str, Any]) -> tuple[str, int]:
    """A new link for ``account`` and when it expires (ms)."""
    token = secrets.token_urlsafe(32)
    expires = ctx.clock_ms() + RESET_TTL_MS
    record = {"accountId": account["id"], "createdAt": ctx.clock_ms(), "expiresAt": expires}
    await accounts.put_reset_link(ctx, token, accounts.stamped(record, account))
    return f"{ctx.public_url}{LINK_PATH}?{urlencode({'token': token})}", expires


def reset_by_mail() -> bool:
    return node().mailer is not None


async def request_reset(email: str) -> None:
    """Start e-mailing a reset link to ``email``'s account, if it has one; returns at once."""
    ctx = node()
    if ctx.mailer is None:
        raise Forbidden(
            "reset_by_operator",
            "This node sends no e-mail: ask its operator for a link to set a new password.",
        )
    limited("reset:ip", client_ip())
    limited("reset:email", email)
    ctx.nursery.start_soon(_mail_link, ctx, email)


async def _mail_link(ctx: NodeContext, email: str) -> None:
    """Outside any request: whatever fails is logged (never the link), and the node goes on."""
    account = await accounts.by_email(ctx, email)
    if account is None or ctx.mailer is None:
        return
    try:
        url, _ = await new_reset_link(ctx, account)
    except Exception as exc:
        log.warning("could not make a reset link for account %s: %r", account["id"], exc)
        return
    body = (
        "Someone, hopefully you, asked to set a new password for your account on "
        f"{ctx.public_url}.\n\nSet it here (the link works once, for an hour):\n\n{url}\n\n"
        "If it was not you, do nothing: your password stays as it is.\n"
    )
    try:
        await ctx.mailer.send(account["email"], "Set a new password", body)
    except (OSError, smtplib.SMTPException) as exc:
        log.warning("could not e-mail a reset link to account %s: %r", account["id"], exc)


async def usable_link(token: object) -> dict[str, Any]:
    """The reset link ``token`` opens; ``404 reset_link_invalid`` for one that is unknown,
    used or expired (the same answer for all three)."""
    ctx = node()
    found = (
        await accounts.reset_link(ctx, token)
        if isinstance(token, str) and 0 < len(token) <= 100
        else None
    )
    if found is None or found["expiresAt"] <= ctx.clock_ms():
        raise _no_such_link()
    # a link made before the password last changed (on any node) is spent with it
    if not accounts.credentials_hold(found, await accounts.get(ctx, found["accountId"])):
        raise _no_such_link()
    return found


def _no_such_link() -> NotFound:
    return NotFound(
        "reset_link_invalid",
        "This link is unknown, used or expired: ask for a new one.",
        field="token",
    )


async def reset_password(token: str, password: str) -> dict[str, Any]:
    """Set ``password`` with the link ``token``, once; the account it was for. Every session
    of the account ends, and so do its other links and any login waiting for its second
    factor."""
    ctx = node()
    limited("reset:ip", client_ip())
    await usable_link(token)
    hashed = await hash_new_password(password)

    async def reset() -> dict[str, Any]:
        link = await usable_link(token)  # a second use racing this one finds it gone
        account = await accounts.get(ctx, link["accountId"])  # as usable_link read it
        if account is None:
            raise _no_such_link()
        await accounts.set_password(ctx, account, hashed)
        return account

    account = await accounts.guarded(ctx, reset)
    log.info("password of account %s reset; its sessions ended", account["id"])
    return account


@blueprint.post("/api/accounts/password-reset")
async def ask_for_reset() -> Response:
    sessions.refuse_cross_site(node())
    body = await read_json_object()
    only(body, {"email"})
    await request_reset(email_of(body))
    return json_response({"accepted": True, "message": REQUESTED}, 202, NO_STORE)


@blueprint.post("/api/accounts/password-reset/complete")
async def complete_reset() -> Response:
    sessions.refuse_cross_site(node())
    body = await read_json_object()
    only(body, {"token", "password"})
    token = body.get("token")
    if not isinstance(token, str):
        raise InvalidInput("token is the one in the link", "token")
    account = await reset_password(token, password_of(body))
    return json_response({"accountId": account["id"], "email": account["email"]}, headers=NO_STORE)
