"""The house's layers import one way: the domain is pure, the HTTP layer reads through the
actors and knows neither the store, the simulators nor the dashboard, the dashboard is a client
of the HTTP layer, and production code never loads a simulator."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

EDGE = Path(__file__).resolve().parents[1] / "edge"


def imports_of(package: str) -> dict[str, set[str]]:
    """Each module of ``edge.<package>`` and the ``edge`` modules it imports (at any depth of
    the file, so an import inside a function counts too)."""
    found: dict[str, set[str]] = {}
    for path in sorted((EDGE / package).rglob("*.py")):
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module)
                if node.module == "edge":
                    names.update(f"edge.{alias.name}" for alias in node.names)
            elif isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
        found[str(path.relative_to(EDGE.parent))] = {n for n in names if n.startswith("edge")}
    return found


def offenders(package: str, allowed: tuple[str, ...] = (), banned: tuple[str, ...] = ()):
    def hits(name: str, prefixes: tuple[str, ...]) -> bool:
        return any(name == p or name.startswith(p + ".") for p in prefixes)

    return {
        module: sorted(
            name
            for name in names
            if (allowed and not hits(name, allowed)) or (banned and hits(name, banned))
        )
        for module, names in imports_of(package).items()
        if any((allowed and not hits(n, allowed)) or (banned and hits(n, banned)) for n in names)
    }


def test_the_layer_check_sees_an_import_it_forbids() -> None:
    assert offenders("dashboard", banned=("edge.http",)), "the dashboard is a client of http"


def test_the_domain_imports_nothing_of_the_node_but_itself() -> None:
    assert offenders("domain", allowed=("edge.domain",)) == {}


@pytest.mark.parametrize("banned", ["edge.store", "edge.sim", "edge.dashboard", "edge.cli"])
def test_http_reads_through_the_actors_and_knows_no_pages(banned: str) -> None:
    assert offenders("http", banned=(banned,)) == {}


@pytest.mark.parametrize("package", ["actors", "store", "providers"])
def test_the_layers_below_http_never_reach_up(package: str) -> None:
    assert offenders(package, banned=("edge.http", "edge.dashboard", "edge.cli")) == {}


@pytest.mark.parametrize("package", ["actors", "store", "providers", "domain", "http"])
def test_production_layers_never_import_a_simulator(package: str) -> None:
    assert offenders(package, banned=("edge.sim",)) == {}
