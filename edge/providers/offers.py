"""Where a provider can work, so it is offered to buyers only there (CONTRACT 4.1): in a mode
whose required credentials are all set (the webhook secret among them: without it no payment
could ever be confirmed), and for a product it can charge (its price rules, and a
subscription only where it takes subscriptions).

The same rules decide public-info, refuse a checkout before anything is stored, and give the
dashboard its words for why a method is not offered."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from edge.domain.status import Kind
from edge.providers import prices
from edge.providers.base import Provider
from edge.providers.registry import PROVIDERS


def display_name(provider: Provider) -> str:
    return provider.display_name or provider.name


# each provider's name in words, by its name in paths (the dashboard's sentences)
NAMES = {name: display_name(provider) for name, provider in PROVIDERS.items()}
# kinds of payment in the order buyers are offered them when the merchant set none: cards
# (a card form, a hosted card form), then wallets, crypto, pay by mail
KINDS_FIRST = ("card", "form", "wallet", "crypto", "manual")


def missing_fields(provider: Provider, stored: Mapping[str, Any]) -> list[str]:
    """The required credential fields ``stored`` (one mode's credentials, sealed, redacted or
    opened: only the names count) lacks."""
    return [f.name for f in provider.credential_fields if f.required and f.name not in stored]


def product_problem(
    provider: Provider, product: Mapping[str, Any], quantity: int = 1
) -> str | None:
    """Why ``provider`` cannot take ``quantity`` of ``product`` (stored form, minor units), in
    words; None when it can."""
    if product["kind"] == Kind.SUBSCRIPTION and not provider.supports_subscriptions:
        return f"{display_name(provider)} takes one-off payments only, not subscriptions"
    found = prices.problem(provider, product, quantity)
    return found.rule if found is not None else None


def availability(
    provider: Provider, config: Mapping[str, Any], products: Iterable[Mapping[str, Any]]
) -> dict[str, Any]:
    """What the management API shows of where a provider is offered: per mode, whether buyers
    see it and which required fields it lacks; and the products it is never offered for, with
    the rule in words."""
    enabled = bool(config.get("enabled"))
    view: dict[str, Any] = {}
    for mode in ("test", "live"):
        missing = missing_fields(provider, config.get(mode) or {})
        view[mode] = {"offered": enabled and not missing, "missing": missing}
    view["products"] = {
        product["id"]: problem
        for product in products
        if (problem := product_problem(provider, product)) is not None
    }
    return view
