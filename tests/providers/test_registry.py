"""One registration per provider, and the layers that must not reach around it: the adapters'
registry holds adapters only, and neither the providers, the actors nor the HTTP layer import a
simulator (the simulators' own registry is tests/sim/test_sim_registry.py)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from edge.providers.base import Provider
from edge.providers.registry import PROVIDERS

EDGE = Path(__file__).parents[2] / "edge"


def test_the_registry_names_its_adapters() -> None:
    assert list(PROVIDERS) == ["stripe", "paypal", "paddle", "btcpay", "manual"]
    for name, adapter in PROVIDERS.items():
        assert isinstance(adapter, Provider) and adapter.name == name


def test_stripe_is_registered_with_its_window() -> None:
    assert PROVIDERS["stripe"].signature_window_s == 300


def _imported(path: Path) -> list[str]:
    names: list[str] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            names.append(node.module or "")
        elif isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
    return names


@pytest.mark.parametrize(
    "path",
    sorted(
        p
        for layer in ("http", "providers", "actors", "domain", "store")
        for p in (EDGE / layer).rglob("*.py")
    ),
    ids=lambda p: str(p.relative_to(EDGE)),
)
def test_the_node_s_layers_never_import_the_simulators(path: Path) -> None:
    assert not [name for name in _imported(path) if name.startswith("edge.sim")]
