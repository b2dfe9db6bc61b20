"""Pay by mail: the buyer sends the amount with a reference code to the merchant's address; the
merchant marks the transaction paid when it arrives. Nothing leaves the node."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from edge.providers.base import CheckoutRequest, CheckoutResult, CredentialField, Provider


@dataclass(frozen=True)
class ManualProvider(Provider):
    def mailing_address(self, credentials: Mapping[str, Any]) -> dict[str, Any] | None:
        address = credentials.get("mailingAddress")
        return dict(address) if address else None

    async def create_checkout(self, request: CheckoutRequest) -> CheckoutResult:
        return CheckoutResult(
            fields={
                "reference": request.tx["reference"],
                "mailingAddress": self.mailing_address(request.credentials),
            }
        )


MANUAL = ManualProvider(
    name="manual",
    display_name="Pay by mail",
    kind="manual",
    checkout_type="reference",
    default_label="Pay by mail",
    credential_fields=(CredentialField("mailingAddress", shape="address"),),
    uses_reference_code=True,
    refunds=True,  # money sent back by hand, recorded by the merchant
    # a mailed payment is paid once: nothing would ever renew a subscription
    supports_subscriptions=False,
)
