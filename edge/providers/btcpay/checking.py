"""Trying BTCPay Server credentials when they are saved: the key's own permissions (``GET
/api/v1/api-keys/current``, answered to any valid key), which must let the node create and read
the store's invoices and refund them (``permissions``)."""

from __future__ import annotations

from edge.providers.base import CredentialsCheck, CredentialsRefused
from edge.providers.btcpay import permissions
from edge.providers.btcpay.api import Greenfield


async def check_credentials(check: CredentialsCheck) -> None:
    server = Greenfield.of(check.http, check.credentials)
    answer = await server.get(server.url("/api/v1/api-keys/current"))
    if answer.status in (401, 403, 404):
        raise CredentialsRefused(
            "apiKey",
            "BTCPay Server does not know this API key: make one under Account > Manage"
            " Account > API Keys.",
        )
    granted = server.json_of(answer)
    listed = granted.get("permissions") if isinstance(granted, dict) else None
    listed = listed if isinstance(listed, list) else []
    lacking = permissions.missing(listed, server.store_id)
    if not lacking:
        return
    if len(lacking) == len(permissions.NEEDED):
        others = [s for s in permissions.stores_named(listed) if s != server.store_id]
        if others:
            raise CredentialsRefused(
                "storeId",
                f"This API key has no permission on store {server.store_id}; it has on"
                f" {', '.join(others[:3])}. Copy the store id from Store Settings > General.",
            )
    needs = "; ".join(f"{policy} to {permissions.NEEDED[policy]}" for policy in lacking)
    raise CredentialsRefused("apiKey", f"This API key lacks permissions the node needs: {needs}.")
