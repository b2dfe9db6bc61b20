"""The providers this node knows, by the name used in paths (CONTRACT 4.2)."""

from __future__ import annotations

from edge.providers.base import Provider
from edge.providers.manual import MANUAL
from edge.providers.stripe import STRIPE

PROVIDERS: dict[str, Provider] = {p.name: p for p in (MANUAL, STRIPE)}
