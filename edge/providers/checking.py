"""Trying a provider's credentials when the merchant saves them (issue: a broken set-up is never
silent). Each mode given is tried with the provider's cheapest authenticated reads
(``Provider.check_credentials``) before anything is stored:

- ``ok``: the provider accepted them and they can do what the node asks;
- ``refused``: the provider refused them (a wrong key, a key of another account or store, a
  permission missing): the save is refused with the field at fault, so the merchant reads it
  beside the field and no buyer ever meets it;
- ``unchecked``: the provider could not be asked (no answer, 5xx, 429, an address the operator
  does not let the node call): saved, with the reason, because a provider's bad minute must not
  stop a merchant's set-up; the dashboard says the credentials are not proven yet;
- ``incomplete``: a required credential is still missing, so there is nothing to try yet.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx
import trio

from edge.errors import ProviderError
from edge.providers.base import CredentialsCheck, CredentialsRefused, Provider

log = logging.getLogger("edge.setup")

OK = "ok"
REFUSED = "refused"
UNCHECKED = "unchecked"
INCOMPLETE = "incomplete"

# a save waits at most this long for the provider (the node's own provider timeout is longer:
# a merchant at a form should not wait 15 s to learn the provider is not answering)
CHECK_TIMEOUT_S = 8.0


@dataclass(frozen=True)
class Checked:
    mode: str
    result: str  # OK, REFUSED, UNCHECKED or INCOMPLETE
    field: str | None = None  # the credential at fault (REFUSED)
    message: str = ""

    def sentence(self, provider: Provider) -> str:
        """What was found, for the merchant and the log (never a secret: the providers' own
        words pass ``edge.providers.calls``, which takes the call's secrets out)."""
        name = provider.display_name or provider.name
        if self.result == REFUSED:
            return f"{name} refused the {self.mode} credentials: {self.message}"
        if self.result == UNCHECKED:
            return f"{name} {self.mode} credentials: {self.message}"
        return f"{name} {self.mode} credentials: {self.result}."

    def view(self) -> dict[str, Any]:
        shown: dict[str, Any] = {"result": self.result}
        if self.field:
            shown["field"] = f"{self.mode}.{self.field}"
        if self.message:
            shown["message"] = self.message
        return shown


async def check_mode(
    provider: Provider, mode: str, credentials: Mapping[str, Any], http: httpx.AsyncClient
) -> Checked:
    """What ``provider`` says of one mode's plain ``credentials``."""
    if provider.check_credentials is None:
        return Checked(mode, OK, message="Nothing to try with the provider.")
    if not provider.is_configured(credentials):
        missing = [f.name for f in provider.credential_fields if f.required]
        missing = [name for name in missing if name not in credentials]
        return Checked(mode, INCOMPLETE, message=f"Still missing: {', '.join(missing)}.")
    request = CredentialsCheck(credentials, mode == "test", http)
    try:
        with trio.fail_after(CHECK_TIMEOUT_S):
            await provider.check_credentials(request)
    except CredentialsRefused as refused:
        return Checked(mode, REFUSED, refused.field, refused.message)
    except ProviderError as error:
        if error.retryable:
            return Checked(mode, UNCHECKED, message=_not_asked(provider, error.message))
        # a refusal the adapter did not name a field for: its key is the likeliest fault
        return Checked(mode, REFUSED, key_field(provider), error.message)
    except trio.TooSlowError:
        name = provider.display_name or provider.name
        return Checked(mode, UNCHECKED, message=_not_asked(provider, f"{name} did not answer."))
    except Exception as exc:  # an address httpx cannot call, an answer of another shape ...
        # never a 500 for a save: the credentials are kept, unproven, and the fault logged
        log.warning("trying %s %s credentials failed: %r", provider.name, mode, type(exc))
        why = f"the call could not be made ({type(exc).__name__})."
        return Checked(mode, UNCHECKED, message=_not_asked(provider, why))
    return Checked(mode, OK)


async def check_modes(
    provider: Provider, opened: Mapping[str, Mapping[str, Any]], http: httpx.AsyncClient
) -> list[Checked]:
    """Every mode of ``opened`` tried at once (test and live are different accounts); none for
    a provider with nothing to try (pay by mail)."""
    if provider.check_credentials is None:
        return []
    found: dict[str, Checked] = {}

    async def one(mode: str) -> None:
        found[mode] = await check_mode(provider, mode, opened[mode], http)

    async with trio.open_nursery() as nursery:
        for mode in opened:
            nursery.start_soon(one, mode)
    return [found[mode] for mode in opened]


def key_field(provider: Provider) -> str | None:
    """The first secret credential: the one a provider's refusal most likely means."""
    return next((f.name for f in provider.credential_fields if f.secret), None)


def _not_asked(provider: Provider, why: str) -> str:
    name = provider.display_name or provider.name
    return f"Saved, but not tried yet: {why} Try again when {name} answers."
