"""An event is applied in one walk (``edge.actors.project.applying``) that calls down only: to the
pure reading of the event (``event_records``), the story's fold, and the ledger. Nothing the walk
uses calls back into the modules events arrive through (intake, asking, checkout)."""

from __future__ import annotations

import ast
from pathlib import Path

import edge.actors.project as project

HERE = Path(project.__file__).parent
ARRIVALS = {"intake", "asking", "checkout"}


def _imports(module: str) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse((HERE / f"{module}.py").read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def _project_modules(names: set[str]) -> set[str]:
    prefix = "edge.actors.project."
    return {n[len(prefix) :].split(".")[0] for n in names if n.startswith(prefix)}


def test_the_walk_never_calls_back_into_where_events_arrive() -> None:
    for module in ("applying", "event_records", "story", "ledger"):
        assert not _project_modules(_imports(module)) & ARRIVALS, module


def test_what_an_event_says_is_read_without_the_store_or_the_ledger() -> None:
    names = _imports("event_records")
    assert _project_modules(names) <= {"story"}
    assert not {n for n in names if n.startswith("edge.store")}
