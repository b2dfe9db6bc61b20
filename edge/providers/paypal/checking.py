"""Trying PayPal credentials when they are saved: an access token for the client id and secret
(the OAuth call every other call starts with), then the webhook the merchant named, which must
be one of this app's (PayPal verifies a delivery's signature against it: a webhook id of
another app, or of the other environment, fails every delivery)."""

from __future__ import annotations

from urllib.parse import quote

from edge.errors import ProviderError
from edge.providers.base import CredentialsCheck, CredentialsRefused
from edge.providers.paypal import api


async def check_credentials(check: CredentialsCheck) -> None:
    webhook_id = str(check.credentials["webhookId"])
    if api.object_id(webhook_id) is None:
        raise CredentialsRefused("webhookId", "This is not a PayPal webhook id.")
    try:
        answer = await api.call(
            check.http,
            check.credentials,
            check.test,
            "GET",
            f"/v1/notifications/webhooks/{quote(webhook_id, safe='')}",
        )
    except ProviderError as error:
        if error.retryable:
            raise
        raise CredentialsRefused("clientSecret", _refused(check.test, error.message)) from None
    if answer.status == 404:
        where = "sandbox" if check.test else "live"
        raise CredentialsRefused(
            "webhookId",
            f"This app has no webhook with this id in PayPal's {where} environment: copy the"
            " Webhook ID shown under the app's Webhooks in the PayPal Developer Dashboard.",
        )
    if answer.status in (401, 403):
        refusal = api.refused(answer, check.credentials)
        raise CredentialsRefused("clientSecret", _refused(check.test, refusal.message))
    if not answer.ok:
        raise api.refused(answer, check.credentials)


def _refused(test: bool, why: str) -> str:
    where = "sandbox" if test else "live"
    return (
        f"{why} Use the client id and secret of a {where} app"
        " (PayPal Developer Dashboard, Apps & Credentials)."
    )
