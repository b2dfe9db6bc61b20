"""Who is calling: a project key (``cmk_live_``/``cmk_test_``, bound to one project and mode),
the node operator's admin token, or an account's dashboard session (its own projects only).
Keys are found by their SHA-256 only; tokens are compared in constant time."""

from __future__ import annotations

import hmac
from dataclasses import dataclass

from quart import request

from edge.actors import accounts
from edge.actors.context import NodeContext
from edge.domain.ids import api_key_mode
from edge.errors import ContractError, Forbidden, Unauthorized, project_not_found
from edge.http.context import node
from edge.http.sessions import check_csrf
from edge.http.sessions import current as current_session


@dataclass(frozen=True)
class Caller:
    """``mode`` is the key's mode, or None for the operator and an account (who see both)."""

    mode: str | None
    key_id: str | None = None
    account_id: str | None = None

    @property
    def is_admin(self) -> bool:
        return self.key_id is None and self.account_id is None

    @property
    def who(self) -> str:
        """Who acts, as a record of it says: a key, an account, or the operator."""
        return self.key_id or self.account_id or "operator"


def _unauthorized(message: str) -> ContractError:
    return Unauthorized("unauthorized", message, headers={"WWW-Authenticate": "Bearer"})


def bearer_token() -> str | None:
    return parse_bearer(request.headers.get("Authorization"))


def parse_bearer(header: str | None) -> str | None:
    if header is None:
        return None
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise _unauthorized("Use Authorization: Bearer <key>.")
    return token.strip()


def is_admin_token(token: str, ctx: NodeContext | None = None) -> bool:
    expected = (ctx or node()).settings.admin_token
    return bool(expected) and hmac.compare_digest(token.encode(), expected.encode())


async def project_caller(
    project_id: str, *, required: bool, sessions: bool = False
) -> Caller | None:
    """With ``sessions``, a request without a key may come from the owner's dashboard session
    (the merchant API, for the dashboard); another account's project is not found."""
    ctx = node()
    authorization = request.headers.get("Authorization")
    if authorization is None and sessions:
        session = await current_session(ctx)
        if session is not None:
            check_csrf(session)
            if session.operator:  # an operator's session sees every project, as the token does
                return Caller(mode=None)
            if session.account_id is None or not await accounts.owns(
                ctx, session.account_id, project_id
            ):
                raise project_not_found()
            return Caller(mode=None, account_id=session.account_id)
    return await caller_for(ctx, project_id, authorization, required=required)


async def caller_for(
    ctx: NodeContext, project_id: str, authorization: str | None, *, required: bool
) -> Caller | None:
    """The caller of a project endpoint: its key (or the admin token), None when anonymous and
    allowed. A key of another project is ``403 forbidden``."""
    token = parse_bearer(authorization)
    if token is None:
        if required:
            raise _unauthorized(
                "This endpoint needs the project's key: Authorization: Bearer cmk_..."
            )
        return None
    if api_key_mode(token) is not None:
        info = await ctx.keys.lookup(token)
        if info is None:
            raise _unauthorized("This key is unknown or revoked.")
        if info.project_id != project_id:
            raise Forbidden("forbidden", "This key belongs to another project.")
        return Caller(mode=info.mode, key_id=info.key_id)
    if is_admin_token(token, ctx):
        return Caller(mode=None)
    raise _unauthorized("This key is unknown or revoked.")


def require_admin() -> None:
    token = bearer_token()
    if token is None:
        raise _unauthorized("The management API needs the operator's token.")
    if not is_admin_token(token):
        if api_key_mode(token) is not None:
            raise Forbidden("forbidden", "A project key cannot use the management API.")
        raise _unauthorized("This token is not the operator's token.")
