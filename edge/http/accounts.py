"""Accounts and sessions (CONTRACT 4.7): sign up on the free tier with an e-mail and a password,
log in for a dashboard session, log out. The operator creates accounts too, also when self
sign-up is closed (``EDGE_SIGNUP=closed``).

Login is limited to 10 attempts a minute per client address and per e-mail, sign-up to 10 an
hour per client address; every password hash waits for a turn in the node's bounded hashing pool
(``edge.actors.hashing``). A wrong e-mail and a wrong password get the same answer, after the
same work (a password is hashed either way).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any

from quart import Blueprint, Response

from edge.actors import accounts
from edge.domain import emails, ids, passwords
from edge.domain.errors import InvalidInput
from edge.domain.timefmt import iso_ms
from edge.errors import Conflict, Forbidden, Unauthorized
from edge.http import sessions
from edge.http.auth import bearer_token, is_admin_token
from edge.http.bodies import only
from edge.http.clients import client_ip
from edge.http.context import limited, node
from edge.http.jsonio import NO_STORE, json_response, read_json_object

blueprint = Blueprint("accounts", __name__)


_decoys: list[str] = []


async def _decoy() -> str:
    """Checked against when the e-mail is unknown, so a wrong e-mail costs what a wrong
    password does."""
    if not _decoys:
        made = await node().hashing.run(
            passwords.hash_password, "not a password of anyone", b"\0" * passwords.SALT_BYTES
        )
        _decoys[:] = [made]
    return _decoys[0]


def email_of(body: dict[str, Any]) -> str:
    email = emails.normalized(body.get("email"))
    if email is None:
        raise InvalidInput("email must be an e-mail address", "email")
    return email


def password_of(body: dict[str, Any]) -> str:
    problem = passwords.problem(body.get("password"))
    if problem is not None:
        raise InvalidInput(problem, "password")
    password: str = body["password"]
    return password


ACCOUNT_FIELDS = frozenset({"email", "password"})
# the operator may make an operator account (``edge account create --operator``)
OPERATOR_ACCOUNT_FIELDS = ACCOUNT_FIELDS | {"operator"}


def account_view(account: dict[str, Any]) -> dict[str, Any]:
    on = account.get("twoFactor")
    return {
        "accountId": account["id"],
        "email": account["email"],
        "tier": account["tier"],
        "operator": bool(account.get("operator")),
        "twoFactor": bool(on),
        "recoveryCodesLeft": len(on["recovery"]) if on else 0,
    }


async def create_account(
    email: str, password: str, *, by_operator: bool = False, operator: bool = False
) -> dict[str, Any]:
    """A new account on the free tier (``409 account_exists`` for an e-mail in use; ``403
    signup_closed`` with EDGE_SIGNUP=closed, unless the operator asks). ``operator``: it sees
    and manages every project (only the operator makes one)."""
    ctx = node()
    if not by_operator and not ctx.settings.signup_open:
        raise Forbidden("signup_closed", "Sign-up is closed on this node: ask its operator.")
    if not by_operator:
        limited("signup:ip", client_ip())
    hashed = await hash_new_password(password)

    async def create() -> dict[str, Any]:
        if await accounts.by_email(ctx, email) is not None:
            raise Conflict("account_exists", "An account with this e-mail exists: log in.")
        account = {
            "id": ids.new_account_id(),
            "email": email,
            "passwordHash": hashed,
            "tier": "free",
            "createdAt": ctx.clock_ms(),
        }
        if operator:
            account["operator"] = True
        await accounts.create(ctx, account)
        return account

    return account_view(await accounts.guarded(ctx, create))


async def hash_new_password(password: str) -> str:
    """``password``'s stored form, with a new salt, hashed in the node's bounded pool."""
    salt = secrets.token_bytes(passwords.SALT_BYTES)
    return await node().hashing.run(passwords.hash_password, password, salt)


@blueprint.post("/api/accounts")
async def sign_up() -> Response:
    token = bearer_token()
    operator = token is not None and is_admin_token(token)
    if token is not None and not operator:
        raise Unauthorized("unauthorized", "This token is not the operator's token.")
    if not operator:  # before reading the body
        sessions.refuse_cross_site(node())
        if not node().settings.signup_open:
            raise Forbidden("signup_closed", "Sign-up is closed on this node: ask its operator.")
    body = await read_json_object()
    only(body, OPERATOR_ACCOUNT_FIELDS if operator else ACCOUNT_FIELDS)
    made_operator = body.get("operator", False)
    if not isinstance(made_operator, bool):
        raise InvalidInput("operator must be true or false", "operator")
    created = await create_account(
        email_of(body), password_of(body), by_operator=operator, operator=made_operator
    )
    return json_response(created, 201, NO_STORE)


@dataclass(frozen=True)
class SignedIn:
    """A new session: its token (the cookie) and its CSRF token."""

    account_id: str
    token: str
    csrf: str


@dataclass(frozen=True)
class SecondFactorDue:
    """The password was right; the account asks for its second factor, within ``expires_ms``
    and against ``challenge`` (``edge.http.two_factor``)."""

    challenge: str
    expires_ms: int


CHALLENGE_TTL_MS = 5 * 60_000


async def log_in(email: str, password: str) -> SignedIn | SecondFactorDue:
    """A session for a right e-mail and password, or, for an account with two-factor login, a
    challenge its code must answer; ``401 invalid_credentials`` otherwise, the same for a wrong
    e-mail and a wrong password."""
    ctx = node()
    limited("login:ip", client_ip())
    limited("login:email", email)
    account = await accounts.by_email(ctx, email)
    stored = account["passwordHash"] if account else await _decoy()
    right = await ctx.hashing.run(passwords.verify, password, stored)
    if account is None or not right:
        raise Unauthorized("invalid_credentials", "The e-mail or the password is wrong.")
    if account.get("twoFactor"):
        challenge = secrets.token_urlsafe(32)
        expires = ctx.clock_ms() + CHALLENGE_TTL_MS
        record = {"accountId": account["id"], "expiresAt": expires, "tries": 0}
        await accounts.put_challenge(ctx, challenge, accounts.stamped(record, account))
        return SecondFactorDue(challenge, expires)
    return await start_session(account)


async def start_session(account: dict[str, Any]) -> SignedIn:
    """A new session of ``account``, holding while the password it was read with does."""
    ctx = node()
    token, csrf, record = sessions.new_session(account, ctx.clock_ms())
    await accounts.put_session(ctx, token, record)
    return SignedIn(account["id"], token, csrf)


def session_answer(signed_in: SignedIn) -> Response:
    """``200 {accountId, csrfToken}`` with the session's cookies."""
    response = json_response(
        {"accountId": signed_in.account_id, "csrfToken": signed_in.csrf}, headers=NO_STORE
    )
    sessions.set_cookies(response, signed_in.token, signed_in.csrf, secure_cookies())
    return response


async def log_in_operator(admin_token: str) -> tuple[str, str]:
    """(session token, CSRF token) of a dashboard session for the node's operator, who signs in
    with the admin token itself; ``401 invalid_credentials`` for anything else. Limited like
    every login, per client address."""
    ctx = node()
    limited("login:ip", client_ip())
    if not admin_token or not is_admin_token(admin_token, ctx):
        raise Unauthorized("invalid_credentials", "This is not the node's admin token.")
    token, csrf, record = sessions.new_session(None, ctx.clock_ms())
    await accounts.put_session(ctx, token, record)
    return token, csrf


def secure_cookies() -> bool:
    return node().public_url.startswith("https://")


@blueprint.post("/api/session")
async def create_session() -> Response:
    sessions.refuse_cross_site(node())
    body = await read_json_object()
    only(body, ACCOUNT_FIELDS)
    email, password = body.get("email"), body.get("password")
    if not isinstance(email, str) or not isinstance(password, str):
        raise InvalidInput("email and password are required strings", "email")
    outcome = await log_in(email.lower(), password)
    if isinstance(outcome, SecondFactorDue):
        due = {
            "twoFactorRequired": True,
            "challenge": outcome.challenge,
            "expiresAt": iso_ms(outcome.expires_ms),
        }
        return json_response(due, 202, NO_STORE)
    return session_answer(outcome)


async def log_out(session: sessions.Session) -> None:
    await accounts.put_session(node(), session.token, None)


@blueprint.delete("/api/session")
async def delete_session() -> Response:
    session = await sessions.current(node())
    if session is None:
        raise Unauthorized("unauthorized", "There is no session to end.")
    sessions.check_csrf(session)
    await log_out(session)
    response = json_response({"loggedOut": True}, headers=NO_STORE)
    sessions.clear_cookies(response, secure_cookies())
    return response
