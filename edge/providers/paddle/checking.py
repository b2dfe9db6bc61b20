"""Trying a Paddle API key when it is saved: one page of one transaction, the entity the node
creates and reads (Paddle answers 403 ``invalid_token`` to a key that is wrong, revoked or of
the other environment, 403 ``forbidden`` to one whose permissions leave transactions out)."""

from __future__ import annotations

from edge.providers.base import CredentialsCheck, CredentialsRefused
from edge.providers.paddle import api

_WHY = {
    "invalid_token": "Paddle does not know this API key (wrong, revoked, or of the other"
    " environment: sandbox keys start pdl_sdbx_apikey_, live ones pdl_live_apikey_).",
    "forbidden": "This API key may not read transactions: give it the transaction and"
    " adjustment permissions (Paddle > Developer tools > Authentication).",
}


async def check_credentials(check: CredentialsCheck) -> None:
    account = api.Account.of(check.http, check.credentials, check.test)
    answer = await account.answer("GET", "/transactions", params={"per_page": "1"})
    if answer.ok:
        return
    if answer.status in (401, 403):
        why = _WHY.get(api.error_code(answer) or "") or account.refused(answer).message
        raise CredentialsRefused("apiKey", why)
    raise account.refused(answer)
