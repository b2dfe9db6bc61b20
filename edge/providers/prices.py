"""What a product costs with one provider, and whether that provider can charge it (CONTRACT
4.3: each provider's own money and length rules, checked when a product is saved and before a
checkout is stored, never discovered at the provider)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from edge.providers.base import PriceProblem, Provider


def price_of(product: Mapping[str, Any], provider: str) -> int:
    """The product's amount with ``provider``: its override there, else its own."""
    override = product.get("overrides", {}).get(provider, {})
    return int(override.get("amount", product["amount"]))


def problem(
    provider: Provider, product: Mapping[str, Any], quantity: int = 1
) -> PriceProblem | None:
    """The rule of ``provider``'s that ``quantity`` of ``product`` breaks, if any."""
    amount = price_of(product, provider.name) * quantity
    return provider.price_problem(amount, product["currency"], product["name"])
