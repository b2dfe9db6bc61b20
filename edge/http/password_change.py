"""``POST /api/account/password``: the signed-in owner sets a new password (CONTRACT 4.7). A
session cookie alone (a stolen one) changes nothing: the current password is in the request,
and the current code when two-factor login is on (``401 reauthentication_required``); both
count against the login's limits. Every other session of the account ends with the old password
(``accounts.set_password``); the caller gets a new one, and the owner an e-mail."""

from __future__ import annotations

import time
from typing import Any

from quart import Blueprint, Response

from edge.actors import accounts
from edge.domain import passwords
from edge.domain.errors import InvalidInput
from edge.errors import Unauthorized
from edge.http.accounts import hash_new_password, session_answer, start_session
from edge.http.bodies import only
from edge.http.context import node
from edge.http.jsonio import read_json_object
from edge.http.two_factor import (
    account_of,
    reauthenticated,
    signed_in,
    spend_code,
    still_signed_in,
    tell_owner,
)

blueprint = Blueprint("password_change", __name__)


@blueprint.post("/api/account/password")
async def change_password() -> Response:
    session, account_id = await signed_in()
    body = await read_json_object()
    only(body, {"password", "newPassword", "code"})
    problem = passwords.problem(body.get("newPassword"))
    if problem is not None:
        raise InvalidInput(problem.replace("password", "newPassword", 1), "newPassword")
    code = body.get("code")
    if code is not None and (not isinstance(code, str) or not 1 <= len(code) <= 40):
        raise InvalidInput("code must be the 6 digits of your app, or a recovery code", "code")
    await reauthenticated(await account_of(account_id), body)
    hashed = await hash_new_password(body["newPassword"])
    ctx = node()

    async def change() -> dict[str, Any]:
        account = await still_signed_in(session)
        if account.get("twoFactor"):
            taken = spend_code(account, code, time.time()) if code else None
            if taken is None:
                raise Unauthorized(
                    "reauthentication_required",
                    "Give the current code of your app (or a recovery code) too.",
                    field="code",
                )
            account = taken
        await accounts.set_password(ctx, account, hashed)
        return {**account, "passwordHash": hashed}

    account = await accounts.guarded(ctx, change)
    tell_owner(account, "Your password was changed", "Your password was changed")
    # every session ended with the old password: this one goes on as a new session
    return session_answer(await start_session(account))
