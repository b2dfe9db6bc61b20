"""Two-factor login (CONTRACT 4.7, docs/api.md): a time-based one-time code from an
authenticator app (``edge.domain.totp``) after the password, or one of ten one-time recovery
codes (``edge.domain.recovery_codes``).

The signed-in account turns it on in two steps: ``POST /api/account/two-factor`` with the
current password makes a secret (shown as an ``otpauth://`` address and as text) that waits,
sealed, until ``POST /api/account/two-factor/confirm`` proves the app has it with a code, within
5 minutes of the password; then the recovery codes are shown, the only time. ``POST
/api/account/two-factor/disable`` with the password and a code turns it off; the operator can
too, for an account that lost both (``edge account 2fa-remove``). A session cookie alone (a
stolen one) changes nothing here: ``401 reauthentication_required``. Every check of a password
or a code counts against the login's limits, and the owner is e-mailed of each change.

At login, ``POST /api/session`` answers an account with two-factor login ``202`` with a
challenge instead of a session, and ``POST /api/session/two-factor`` trades the challenge and a
code for the session. A challenge lasts 5 minutes and 5 wrong codes; every code counts against
the login limits of the address and the e-mail, as a password does.

The secret is sealed at rest like a provider's secrets (AES-GCM, bound to the account); codes
are compared in constant time, and a code (or a recovery code) is taken once.
"""

from __future__ import annotations

import logging
import secrets
import smtplib
import time
from typing import Any

from quart import Blueprint, Response

from edge.actors import accounts
from edge.actors.context import NodeContext
from edge.domain import passwords, recovery_codes, totp
from edge.domain.errors import InvalidInput
from edge.errors import Conflict, Unauthorized
from edge.http import sessions
from edge.http.accounts import SignedIn, account_view, session_answer, start_session
from edge.http.bodies import only
from edge.http.clients import client_ip
from edge.http.context import limited, node
from edge.http.jsonio import NO_STORE, json_response, read_json_object

blueprint = Blueprint("two_factor", __name__)

ISSUER = "edge"
CHALLENGE_TRIES = 5
# a password given this long ago still stands for the change it was given for (confirming)
REAUTH_MS = 5 * 60 * 1000

log = logging.getLogger("edge.accounts")


def sealed_place(account_id: str) -> str:
    """Where an account's TOTP secret belongs: its sealed value opens only there."""
    return f"accounts/{account_id}/totp"


async def signed_in() -> tuple[sessions.Session, str]:
    """The request's session and its account's id (a session of the operator's token has no
    account)."""
    session = await sessions.current(node())
    if session is None or session.account_id is None:
        raise Unauthorized("unauthorized", "Log in first: this is about your own account.")
    sessions.check_csrf(session)
    limited("manage", session.account_id)
    return session, session.account_id


async def still_signed_in(session: sessions.Session) -> dict[str, Any]:
    """Inside a guarded change: the session's account, read with the session itself, so the
    change commits only while both are as read. A session that a logout or a password reset
    (on any node) ended meanwhile changes nothing: the change runs again and finds it gone."""
    ctx = node()
    record = await accounts.session(ctx, session.token)
    account = None if record is None else await accounts.get(ctx, record["accountId"])
    if record is None or account is None or not sessions.holds(record, account, ctx.clock_ms()):
        raise Unauthorized("unauthorized", "This session has ended: log in again.")
    return account


async def account_of(account_id: str) -> dict[str, Any]:
    found = await accounts.get(node(), account_id)
    if found is None:  # a session outlives no account, but say so rather than fail
        raise Unauthorized("unauthorized", "This account no longer exists.")
    return found


async def reauthenticated(account: dict[str, Any], body: dict[str, Any]) -> None:
    """The account's current password is in ``body``, checked against the login's limits;
    ``401 reauthentication_required`` otherwise."""
    ctx = node()
    _count_try(account)
    password = body.get("password")
    right = (
        isinstance(password, str)
        and 0 < len(password) <= passwords.MAX_LENGTH
        and await ctx.hashing.run(passwords.verify, password, account["passwordHash"])
    )
    if not right:
        raise Unauthorized(
            "reauthentication_required",
            "Give your current password: a change of two-factor login needs it.",
            field="password",
        )


def _count_try(account: dict[str, Any]) -> None:
    """A password or code tried here counts as a login's would (per address and e-mail)."""
    limited("login:ip", client_ip())
    limited("login:email", account["email"])


def tell_owner(account: dict[str, Any], subject: str, what: str) -> None:
    """E-mail the account's owner that ``what`` happened (when the node sends e-mail): a
    change made by someone else is then seen."""
    ctx = node()
    if ctx.mailer is not None:
        ctx.nursery.start_soon(_mail, ctx, account, subject, what)


async def _mail(ctx: NodeContext, account: dict[str, Any], subject: str, what: str) -> None:
    body = (
        f"{what} for your account on {ctx.public_url}.\n\nIf it was not you, set a new password"
        " now (Forgot your password? on the login page) and tell the node's operator.\n"
    )
    try:
        assert ctx.mailer is not None
        await ctx.mailer.send(account["email"], subject, body)
    except (OSError, smtplib.SMTPException) as exc:
        log.warning("could not e-mail account %s of a change: %r", account["id"], exc)


def _code_of(body: dict[str, Any]) -> str:
    """The code as the API reference shapes it (a string of 1 to 40 characters); whether it
    is one the account takes is the code's check (a blank one is just not right: 401)."""
    code = body.get("code")
    if not isinstance(code, str) or not 1 <= len(code) <= 40:
        raise InvalidInput("code must be the 6 digits of your app, or a recovery code", "code")
    return code


def spend_code(account: dict[str, Any], code: str, now_s: float) -> dict[str, Any] | None:
    """``account`` as it is once ``code`` (the app's, or a recovery code) has been taken, or
    None when ``code`` is not one it takes now."""
    on = account.get("twoFactor")
    if not on:
        return None
    secret = node().sealer.open(on["sealed"], sealed_place(account["id"]))
    step = totp.accepted_step(secret, code, now_s, on.get("lastStep", -1))
    if step is not None:
        return {**account, "twoFactor": {**on, "lastStep": step}}
    recovery = recovery_codes.normalized(code)
    if recovery is not None:
        spent = recovery_codes.digest(recovery)
        left = [kept for kept in on["recovery"] if not secrets.compare_digest(kept, spent)]
        if len(left) < len(on["recovery"]):
            return {**account, "twoFactor": {**on, "recovery": left}}
    return None


def _expired() -> Unauthorized:
    return Unauthorized(
        "challenge_expired", "This login has expired: log in again.", field="challenge"
    )


def _wrong_code() -> Unauthorized:
    return Unauthorized(
        "invalid_code", "This code is not right (or was used already).", field="code"
    )


# -- the account's own settings ---------------------------------------------------------------


@blueprint.get("/api/account")
async def show_account() -> Response:
    _, account_id = await signed_in()
    return json_response(account_view(await account_of(account_id)), headers=NO_STORE)


@blueprint.post("/api/account/two-factor")
async def start_enrolment() -> Response:
    session, account_id = await signed_in()
    body = await read_json_object(optional=True)
    only(body, {"password"})
    ctx = node()
    await reauthenticated(await account_of(account_id), body)

    async def start() -> tuple[dict[str, Any], str]:
        account = await still_signed_in(session)
        if account.get("twoFactor"):
            raise Conflict("two_factor_enabled", "Two-factor login is on already.")
        secret = totp.secret_from(secrets.token_bytes(totp.SECRET_BYTES))
        pending = {
            "sealed": ctx.sealer.seal(secret, sealed_place(account["id"])),
            "createdAt": ctx.clock_ms(),
        }
        await accounts.save(ctx, {**account, "twoFactorPending": pending})
        return account, secret

    account, secret = await accounts.guarded(ctx, start)
    uri = totp.provisioning_uri(secret, account["email"], ISSUER)
    return json_response({"secret": secret, "otpauthUri": uri}, headers=NO_STORE)


@blueprint.post("/api/account/two-factor/confirm")
async def confirm_enrolment() -> Response:
    session, account_id = await signed_in()
    body = await read_json_object()
    only(body, {"code"})
    code = _code_of(body)
    ctx = node()
    _count_try(await account_of(account_id))

    async def confirm() -> list[str]:
        account = await still_signed_in(session)
        pending = account.get("twoFactorPending")
        if account.get("twoFactor") or not pending:
            raise Conflict(
                "two_factor_not_started",
                "Start turning two-factor login on first (POST /api/account/two-factor).",
            )
        if ctx.clock_ms() - pending["createdAt"] > REAUTH_MS:
            raise Unauthorized(
                "reauthentication_required",
                "Your password was given more than 5 minutes ago: start again with it.",
                field="password",
            )
        secret = ctx.sealer.open(pending["sealed"], sealed_place(account["id"]))
        step = totp.accepted_step(secret, code, time.time(), -1)
        if step is None:
            raise Unauthorized(
                "invalid_code",
                "This code is not the app's current one: try the next.",
                field="code",
            )
        codes = recovery_codes.new_codes(secrets.randbits)
        on = {
            "sealed": pending["sealed"],
            "lastStep": step,
            "recovery": [recovery_codes.digest(recovery_codes.normalized(c) or "") for c in codes],
            "enabledAt": ctx.clock_ms(),
        }
        changed = {k: v for k, v in account.items() if k != "twoFactorPending"}
        await accounts.save(ctx, {**changed, "twoFactor": on})
        return codes

    codes = await accounts.guarded(ctx, confirm)
    tell_owner(
        await account_of(account_id), "Two-factor login is on", "Two-factor login was turned on"
    )
    # the only time the recovery codes are shown
    return json_response({"twoFactor": True, "recoveryCodes": codes}, headers=NO_STORE)


@blueprint.post("/api/account/two-factor/disable")
async def disable() -> Response:
    session, account_id = await signed_in()
    body = await read_json_object()
    only(body, {"code", "password"})
    code = _code_of(body)
    ctx = node()
    await reauthenticated(await account_of(account_id), body)

    async def turn_off() -> None:
        account = await still_signed_in(session)
        if not account.get("twoFactor"):
            raise Conflict("two_factor_disabled", "Two-factor login is off already.")
        if spend_code(account, code, time.time()) is None:
            raise _wrong_code()
        await accounts.save(ctx, without_two_factor(account))

    await accounts.guarded(ctx, turn_off)
    tell_owner(
        await account_of(account_id), "Two-factor login is off", "Two-factor login was turned off"
    )
    return json_response({"twoFactor": False}, headers=NO_STORE)


def without_two_factor(account: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in account.items() if k not in ("twoFactor", "twoFactorPending")}


# -- the login's second step ------------------------------------------------------------------


async def complete_login(challenge: str, code: str) -> SignedIn:
    """The session a challenge and its code open; ``401 invalid_code`` for a wrong code, and
    ``401 challenge_expired`` once the challenge is unknown, used up or late."""
    ctx = node()
    limited("login:ip", client_ip())
    rated = False

    async def spend() -> dict[str, Any]:
        nonlocal rated
        pending = await accounts.challenge(ctx, challenge) if len(challenge) <= 100 else None
        if pending is None or pending["expiresAt"] <= ctx.clock_ms():
            raise _expired()
        account = await account_of(pending["accountId"])
        if not accounts.credentials_hold(pending, account):  # the password changed since
            raise _expired()
        if not rated:  # a try is counted once, however often a lost race runs it again
            limited("login:email", account["email"])
            rated = True
        taken = spend_code(account, code, time.time())
        if taken is None:
            tries = pending["tries"] + 1
            record = None if tries >= CHALLENGE_TRIES else {**pending, "tries": tries}
            await accounts.put_challenge(ctx, challenge, record)
            raise _wrong_code()
        await accounts.save(ctx, taken, spent=challenge)
        return taken

    return await start_session(await accounts.guarded(ctx, spend))


@blueprint.post("/api/session/two-factor")
async def second_step() -> Response:
    sessions.refuse_cross_site(node())
    body = await read_json_object()
    only(body, {"challenge", "code"})
    challenge = body.get("challenge")
    if not isinstance(challenge, str) or not challenge:
        raise InvalidInput("challenge is the one the login answered", "challenge")
    return session_answer(await complete_login(challenge, _code_of(body)))
