"""The interface every payment provider implements.

An adapter is stateless: credentials, the transaction and an HTTP client are passed in, so the
project actor stays the only owner of state. Adapters raise ``Failure`` for contract errors
(``502 provider_error`` when the provider's API fails).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx

from edge.failures import Failure


@dataclass(frozen=True)
class CredentialField:
    """One per-mode credential setting; ``secret`` ones are sealed at rest and write-only."""

    name: str
    secret: bool = False
    required: bool = True
    shape: str = "string"  # "string", "address" (a mailing address object), "hosts" (list)


@dataclass(frozen=True)
class CheckoutRequest:
    tx: Mapping[str, Any]
    product: Mapping[str, Any]
    credentials: Mapping[str, Any]
    success_url: str
    cancel_url: str
    http: httpx.AsyncClient


@dataclass(frozen=True)
class CheckoutResult:
    """What the client needs to continue (``fields``: url, token, reference ...), the provider's
    own id for the checkout (to match webhooks), and when it stops being usable."""

    fields: dict[str, Any]
    provider_ref: str | None = None
    expires_at_ms: int | None = None


@dataclass(frozen=True)
class PortalRequest:
    subscription: Mapping[str, Any]
    credentials: Mapping[str, Any]
    return_url: str
    http: httpx.AsyncClient


@dataclass(frozen=True)
class PortalResult:
    url: str
    expires_at_ms: int | None = None


@dataclass(frozen=True)
class Provider:
    name: str
    kind: str  # card, wallet, form, crypto, manual
    checkout_type: str  # redirect, approval, token, reference
    default_label: str
    icon: str  # file name under /static/icons/
    credential_fields: tuple[CredentialField, ...] = field(default=())
    publishable_field: str | None = None
    uses_reference_code: bool = False

    def is_configured(self, credentials: Mapping[str, Any]) -> bool:
        return all(f.name in credentials for f in self.credential_fields if f.required)

    def publishable_key(self, credentials: Mapping[str, Any]) -> str | None:
        return credentials.get(self.publishable_field) if self.publishable_field else None

    def mailing_address(self, credentials: Mapping[str, Any]) -> dict[str, Any] | None:
        return None

    async def create_checkout(self, request: CheckoutRequest) -> CheckoutResult:
        raise NotImplementedError

    async def portal_url(self, request: PortalRequest) -> PortalResult:
        raise Failure(
            409, "portal_unsupported", f"{self.name} has no hosted subscription portal."
        )
