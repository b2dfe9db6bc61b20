"""Trying a Stripe secret key when it is saved: one list of Checkout Sessions, the object the
node creates and reads most (a restricted key needs at least read on Checkout Sessions; Stripe
answers 401 to a key that is wrong, rolled or deleted, 403 to one without the permission)."""

from __future__ import annotations

from edge.providers.base import CredentialsCheck, CredentialsRefused
from edge.providers.stripe import api


async def check_credentials(check: CredentialsCheck) -> None:
    answer = await api.get_answer(
        check.http, check.credentials, "/v1/checkout/sessions", {"limit": 1}
    )
    if answer.ok:
        return
    error = api.refusal(check.credentials, answer)
    if answer.status in (401, 403):
        raise CredentialsRefused("secretKey", f"Stripe refused this key: {_said(error.message)}")
    raise error


def _said(message: str) -> str:
    # "Stripe answered 401: Invalid API Key ..." -> "Invalid API Key ..."
    return message.partition(": ")[2] or message
