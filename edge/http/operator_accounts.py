"""The operator's hand on accounts (docs/operations.md): list the node's accounts or find one
by its e-mail, make one an operator (``edge account operator``), give one a link to set a new
password (``edge account reset-link``), and turn off its two-factor login when its owner lost
both the app and the recovery codes (``edge account 2fa-remove``). The operator only (the
token, or an operator account's session): an account never reaches another's."""

from __future__ import annotations

from typing import Any

from quart import Blueprint, Response, request

from edge.actors import accounts
from edge.domain import emails, ids
from edge.domain.errors import InvalidInput
from edge.domain.timefmt import iso_ms
from edge.errors import InvalidRequest, NotFound
from edge.http.accounts import account_view
from edge.http.bodies import only
from edge.http.context import node
from edge.http.jsonio import NO_STORE, json_response, read_json_object
from edge.http.manage import manager, operator_only
from edge.http.password_reset import new_reset_link
from edge.http.two_factor import without_two_factor

blueprint = Blueprint("operator_accounts", __name__, url_prefix="/api/manage/accounts")


@blueprint.before_request
async def _operator() -> None:
    await manager()
    operator_only()


async def _account(account_id: str) -> dict[str, Any]:
    found = await accounts.get(node(), account_id) if ids.is_account_id(account_id) else None
    if found is None:
        raise NotFound("account_not_found", "No account with this id.")
    return found


@blueprint.get("")
async def list_accounts() -> Response:
    """Every account, or with ``?email=`` the one with that e-mail (none or one), each with how
    many projects it owns."""
    ctx = node()
    asked = request.args.get("email")
    if asked is not None:
        email = emails.normalized(asked)
        if email is None:
            raise InvalidInput("email must be an e-mail address", "email")
        found = await accounts.by_email(ctx, email)
        listed = [found] if found is not None else []
    else:
        listed = await accounts.every(ctx)
    items = [
        {**account_view(a), "projects": len(await accounts.owned_projects(ctx, a["id"]))}
        for a in listed
    ]
    return json_response({"items": items}, headers=NO_STORE)


@blueprint.patch("/<account_id>")
async def patch_account(account_id: str) -> Response:
    """Make an account an operator, or no longer one (``edge account operator``)."""
    body = await read_json_object()
    only(body, {"operator"})
    operator = body.get("operator")
    if not isinstance(operator, bool):
        raise InvalidRequest("invalid_request", "operator must be true or false", field="operator")
    ctx = node()

    async def change() -> dict[str, Any]:
        found = {**await _account(account_id), "operator": operator}
        await accounts.save(ctx, found)
        return found

    return json_response(account_view(await accounts.guarded(ctx, change)), headers=NO_STORE)


@blueprint.post("/<account_id>/reset-link")
async def make_reset_link(account_id: str) -> Response:
    account = await _account(account_id)
    url, expires = await new_reset_link(node(), account)
    answer = {
        "accountId": account["id"],
        "email": account["email"],
        "url": url,
        "expiresAt": iso_ms(expires),
    }
    return json_response(answer, 201, NO_STORE)


@blueprint.delete("/<account_id>/two-factor")
async def remove_two_factor(account_id: str) -> Response:
    ctx = node()

    async def remove() -> dict[str, Any]:
        account = without_two_factor(await _account(account_id))
        await accounts.save(ctx, account)
        return account

    return json_response(account_view(await accounts.guarded(ctx, remove)), headers=NO_STORE)
