"""The operator's hand on accounts (docs/operations.md): find an account by its e-mail, give
it a link to set a new password (``edge account reset-link``), and turn off its two-factor login
when its owner lost both the app and the recovery codes (``edge account 2fa-remove``). The
operator's token only: an account never reaches another's."""

from __future__ import annotations

from typing import Any

from quart import Blueprint, Response, request

from edge.domain import emails, ids
from edge.domain.errors import InvalidInput
from edge.domain.timefmt import iso_ms
from edge.errors import NotFound
from edge.http.auth import require_admin
from edge.http.context import node
from edge.http.jsonio import NO_STORE, json_response
from edge.http.password_reset import new_reset_link
from edge.http.two_factor import account_view, without_two_factor
from edge.store import accounts

blueprint = Blueprint("operator_accounts", __name__, url_prefix="/api/manage/accounts")


@blueprint.before_request
async def _operator() -> None:
    require_admin()
    node().manage_rates.take("manage", "operator")


def _account(account_id: str) -> dict[str, Any]:
    found = accounts.account(node().store, account_id) if ids.is_account_id(account_id) else None
    if found is None:
        raise NotFound("account_not_found", "No account with this id.")
    return found


@blueprint.get("")
async def find_accounts() -> Response:
    email = emails.normalized(request.args.get("email"))
    if email is None:
        raise InvalidInput("email must be an e-mail address", "email")
    found = accounts.account_by_email(node().store, email)
    items = [account_view(found)] if found else []
    return json_response({"items": items}, headers=NO_STORE)


@blueprint.post("/<account_id>/reset-link")
async def make_reset_link(account_id: str) -> Response:
    account = _account(account_id)
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
    async with ctx.accounts_lock:
        account = without_two_factor(_account(account_id))
        await ctx.writer.write(accounts.account_ops(account))
    return json_response(account_view(account), headers=NO_STORE)
