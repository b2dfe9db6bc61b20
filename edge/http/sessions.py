"""Dashboard sessions (CONTRACT 4.7): a random 256-bit token in an ``HttpOnly``,
``SameSite=Lax`` cookie, kept on the node only as its SHA-256, for 14 days after its last use.
A state-changing call made with a session must carry its CSRF token (``Cm-Csrf``, or the
``csrf`` field of a dashboard form): a cookie alone proves nothing about who built the request.
"""

from __future__ import annotations

import hmac
import secrets
from dataclasses import dataclass
from typing import Any

from quart import Response, request

from edge.actors import accounts
from edge.actors.context import NodeContext
from edge.domain import cross_site
from edge.errors import Forbidden

COOKIE = "cm_session"
# the CSRF token, for the dashboard's own forms (a page cannot read it back from the node, which
# keeps only its hash); a cookie is never sent along by another site's form (SameSite) and
# cannot be read by another origin's script
CSRF_COOKIE = "cm_csrf"
CSRF_HEADER = "Cm-Csrf"
TTL_MS = 14 * 86_400_000
EXTEND_AFTER_MS = 86_400_000  # a sliding expiry, written at most once a day per session
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


@dataclass(frozen=True)
class Session:
    """``account_id`` None: the operator signed in with the admin token. ``operator``: the
    session sees and manages every project (an operator account, or the admin token)."""

    token: str
    account_id: str | None
    csrf: bytes  # SHA-256 of the CSRF token
    operator: bool = False

    def csrf_matches(self, offered: str | None) -> bool:
        return offered is not None and hmac.compare_digest(accounts.digest(offered), self.csrf)


def new_session(account: dict[str, Any] | None, now_ms: int) -> tuple[str, str, dict[str, Any]]:
    """A session token, its CSRF token, and the record kept (neither token in it). No
    ``account``: the operator's own session, signed in with the admin token."""
    token, csrf = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
    record: dict[str, Any] = {
        "accountId": None if account is None else account["id"],
        "csrf": accounts.digest(csrf),
        "createdAt": now_ms,
        "expiresAt": now_ms + TTL_MS,
    }
    if account is None:
        record["operator"] = True
        return token, csrf, record
    return token, csrf, accounts.stamped(record, account)


def holds(record: dict[str, Any], account: dict[str, Any] | None, now_ms: int) -> bool:
    """The stored session is live: unexpired and, for an account's, that account there under
    the password the session was made with."""
    if record["expiresAt"] <= now_ms:
        return False
    if record["accountId"] is None:  # the operator's own session
        return True
    return account is not None and accounts.credentials_hold(record, account)


async def current(ctx: NodeContext) -> Session | None:
    """The request's live session, if its cookie names one; extends it once a day of use."""
    token = request.cookies.get(COOKIE)
    if not token or len(token) > 100:
        return None
    stored = await accounts.session_as_stored(ctx, token)
    now = ctx.clock_ms()
    if stored is None:
        return None
    record, raw = stored
    account_id = record["accountId"]
    # read at every request: an account made (or no longer) an operator is so at once, and a
    # session made under a password since changed ends at once, whichever node made it
    account = None if account_id is None else await accounts.get(ctx, account_id)
    if not holds(record, account, now):
        return None
    if record["expiresAt"] - now < TTL_MS - EXTEND_AFTER_MS:
        extended = {**record, "expiresAt": now + TTL_MS}
        if account is not None and "credentials" not in record:  # made before stamps were
            extended = accounts.stamped(extended, account)
        accounts.put_session_soon(ctx, token, extended, raw)
    operator = bool(record.get("operator")) or bool(account and account.get("operator"))
    return Session(token, account_id, record["csrf"], operator)


def check_csrf(session: Session, offered: str | None = None) -> None:
    """``403 csrf_failed`` for a state-changing request without the session's CSRF token."""
    if request.method in SAFE_METHODS:
        return
    if not session.csrf_matches(offered or request.headers.get(CSRF_HEADER)):
        raise Forbidden(
            "csrf_failed", "A change made with a session needs its token in the Cm-Csrf header."
        )


def refuse_cross_site(ctx: NodeContext) -> None:
    """``403 csrf_failed`` for a request that signs in or up (or resets a password) sent by a
    browser on another site's behalf (``edge.domain.cross_site``): there is no session yet
    whose token could prove where it came from."""
    own = cross_site.own_origins(request.headers.get("Host"), ctx.public_url)
    if cross_site.is_cross_site(
        request.headers.get("Sec-Fetch-Site"), request.headers.get("Origin"), own
    ):
        raise Forbidden(
            "csrf_failed", "This form was sent from another site: use the node's own page."
        )


def set_cookies(response: Response, token: str, csrf: str, secure: bool) -> None:
    for name, value in ((COOKIE, token), (CSRF_COOKIE, csrf)):
        response.set_cookie(
            name,
            value,
            max_age=TTL_MS // 1000,
            httponly=True,
            samesite="Lax",
            secure=secure,
            path="/",
        )


def clear_cookies(response: Response, secure: bool) -> None:
    for name in (COOKIE, CSRF_COOKIE):
        response.delete_cookie(name, path="/", httponly=True, samesite="Lax", secure=secure)
