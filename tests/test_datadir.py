"""The node's private files in its data directory (``edge.datadir.write_private``)."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from edge.datadir import write_private


def test_a_private_file_is_0600_whatever_it_was(tmp_path: Path) -> None:
    path = tmp_path / "demo.json"
    path.write_text("old\n")
    path.chmod(0o644)
    write_private(path, '{"projectId": "prj_x"}\n')
    assert path.read_text() == '{"projectId": "prj_x"}\n'
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["demo.json"]  # nothing left beside it


def test_a_write_that_fails_leaves_the_file_as_it_was(tmp_path: Path) -> None:
    """Whole or not at all: the file is never seen empty or cut short (a test waiting for the
    demo's file read it empty once, between its creation and its text)."""
    path = tmp_path / "admin-token"
    write_private(path, "first\n")
    with pytest.raises(UnicodeEncodeError):
        write_private(path, "second \ud800\n")  # a lone surrogate: the text cannot be written
    assert path.read_text() == "first\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["admin-token"]
