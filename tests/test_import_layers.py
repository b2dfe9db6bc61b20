"""The house's layers import one way: the domain is pure, the HTTP layer reads through the
actors and knows neither the store, the simulators nor the dashboard, the dashboard is a client
of the HTTP layer, and production code never loads a simulator."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

EDGE = Path(__file__).resolve().parents[1] / "edge"


def imports_of(package: str, *, libraries: bool = False) -> dict[str, set[str]]:
    """Each module of ``edge.<package>`` and the ``edge`` modules it imports (at any depth of
    the file, so an import inside a function counts too); ``libraries``: every other module it
    imports too."""
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
        found[str(path.relative_to(EDGE.parent))] = {
            n for n in names if libraries or n.startswith("edge")
        }
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


ENGINES = ("lmdb", "postgres")
INTERFACE = ("edge.store.engine", "edge.store.codec")  # the ops and errors, and the values


def store_offenders(modules: dict[str, set[str]], allowed: tuple[str, ...]) -> dict[str, list[str]]:
    """The modules that import a module of ``edge.store`` outside ``allowed``."""

    def within(name: str) -> bool:
        return any(name == a or name.startswith(a + ".") for a in allowed)

    return {
        module: sorted(bad)
        for module, names in modules.items()
        if (bad := {n for n in names if n.startswith("edge.store") and not within(n)})
    }


@pytest.mark.parametrize("engine", ENGINES)
def test_an_engine_imports_only_the_store_interface(engine: str) -> None:
    modules = imports_of(f"store/{engine}")
    assert modules, f"no engine package edge/store/{engine}"
    assert store_offenders(modules, (*INTERFACE, f"edge.store.{engine}")) == {}


def test_the_store_interface_imports_no_engine() -> None:
    interface = {m: n for m, n in imports_of("store").items() if m == "edge/store/engine.py"}
    assert interface, "the interface moved: point this test at it"
    assert store_offenders(interface, (*INTERFACE, "edge.store.keys")) == {}


# what knows an engine by name: the copy between them, and the backup of a data dir's LMDB store
KNOW_ENGINES = {"edge/store/copy.py", "edge/store/backup.py"}


def test_the_rest_of_the_store_knows_no_engine_nor_its_library() -> None:
    """The writer, the queues and the checks are written against the interface alone: an
    engine's errors reach them in the interface's words (``StoreUnavailable``)."""
    neutral = {
        module: names
        for module, names in imports_of("store", libraries=True).items()
        if not module.startswith(tuple(f"edge/store/{e}/" for e in ENGINES))
        and module not in KNOW_ENGINES
    }
    assert "edge/store/writer.py" in neutral
    engines = tuple(f"edge.store.{e}" for e in ENGINES)
    assert {
        module: sorted(n for n in names if n.startswith((*engines, "lmdb", "psycopg")))
        for module, names in neutral.items()
        if any(n.startswith((*engines, "lmdb", "psycopg")) for n in names)
    } == {}


def test_the_engine_check_sees_a_module_that_knows_both_engines() -> None:
    # the copy between engines knows both, so it lives beside them, not in either
    copy = {m: n for m, n in imports_of("store").items() if m == "edge/store/copy.py"}
    assert store_offenders(copy, (*INTERFACE, "edge.store.lmdb")) != {}
