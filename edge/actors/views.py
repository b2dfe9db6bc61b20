"""Wire shapes of configuration: projects, products, providers and keys (CONTRACT 4.6)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from edge.actors.records import iso_or_none
from edge.domain.modes import MODES
from edge.domain.money import to_wire
from edge.providers.credentials import redact_mode
from edge.providers.offers import availability
from edge.providers.registry import PROVIDERS


def product_view(product: Mapping[str, Any], public: bool = False) -> dict[str, Any]:
    currency = product["currency"]
    view: dict[str, Any] = {
        "id": product["id"],
        "name": product["name"],
        "kind": product["kind"],
        "interval": product.get("interval"),
        "amount": to_wire(product["amount"], currency),
        "currency": currency,
    }
    if not public:
        view["overrides"] = {
            name: {
                **{k: v for k, v in override.items() if k != "amount"},
                **(
                    {"amount": to_wire(override["amount"], currency)}
                    if "amount" in override
                    else {}
                ),
            }
            for name, override in product.get("overrides", {}).items()
        }
    return view


def provider_view(
    name: str, config: Mapping[str, Any], products: Iterable[Mapping[str, Any]] = ()
) -> dict[str, Any]:
    """A provider's settings, secrets redacted, with where buyers are offered it (per mode, and
    the ``products`` it cannot take)."""
    view: dict[str, Any] = {
        "provider": name,
        "enabled": config.get("enabled", False),
        "label": config.get("label"),
        "order": config.get("order"),
    }
    for mode in MODES:
        view[mode] = redact_mode(config.get(mode) or {})
    # what trying each mode's credentials found when they were saved, or a checkout since
    # (edge.providers.checking)
    view["checks"] = {
        mode: {**check, "at": iso_or_none(check.get("at"))}
        for mode, check in (config.get("checks") or {}).items()
    }
    provider = PROVIDERS.get(name)
    if provider is not None:
        view["availability"] = availability(provider, config, products)
    return view


def key_view(meta: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "keyId": meta["keyId"],
        "mode": meta["mode"],
        "name": meta["name"],
        "last4": meta["last4"],
        "createdAt": iso_or_none(meta["createdAt"]),
    }


def project_view(project: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "id": project["id"],
        "name": project["name"],
        "successUrl": project["successUrl"],
        "cancelUrl": project["cancelUrl"],
        "allowedOrigins": list(project["allowedOrigins"]),
        "tier": project["tier"],
        # the account that made it; None: the operator's (made with the command line)
        "owner": project.get("accountId"),
        "createdAt": iso_or_none(project["createdAt"]),
        "updatedAt": iso_or_none(project["updatedAt"]),
        "products": [product_view(p) for p in project["products"].values()],
        "providers": [
            provider_view(n, c, project["products"].values())
            for n, c in project["providers"].items()
        ],
        "keys": [key_view(k) for k in project["keys"].values()],
    }
