"""``make run`` and ``make demo`` say what they do while they install (a first install takes a
minute or two), fail when the install fails, and keep the demo's data apart from a real node's
(``./edge-demo-data``). Run against a stand-in virtual environment whose ``python`` and ``edge``
record what they are asked, so nothing is installed."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from support.waits import bound

REPO = Path(__file__).resolve().parents[2]
STUB_PYTHON = """#!/bin/sh
echo "python $*" >> "$(dirname "$0")/../calls"
case "$*" in
  *"-r requirements/dev.lock"*|*"-r requirements/runtime.lock"*)
    echo "Collecting trio"
    echo "  Downloading trio-0.30.0-py3-none-any.whl"
    echo "Installing collected packages: trio, edge"
    echo "Successfully installed edge-0.1.0 trio-0.30.0"
    if [ -n "$FAIL_INSTALL" ]; then echo "ERROR: no matching distribution" >&2; exit 1; fi;;
esac
"""
STUB_EDGE = '#!/bin/sh\necho "edge $*" >> "$(dirname "$0")/../calls"\n'


@pytest.fixture
def venv(tmp_path: Path) -> Path:
    if shutil.which("make") is None:
        pytest.skip("no make")
    bin_dir = tmp_path / "venv" / "bin"
    bin_dir.mkdir(parents=True)
    for name, text in (("python", STUB_PYTHON), ("edge", STUB_EDGE)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    return tmp_path / "venv"


def make(venv: Path, target: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["make", "--no-print-directory", target, f"VENV={venv}"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=bound(60),
        env={"PATH": "/usr/bin:/bin", **env},
    )


def test_make_run_says_each_step_of_the_install_then_serves(venv):
    ran = make(venv, "run")
    assert ran.returncode == 0, ran.stderr
    said = [line for line in ran.stdout.splitlines() if line.startswith(("edge:", "Coll", "Inst"))]
    assert said == [
        f"edge: setting up {venv} to run the node (the first time takes a minute)",
        "edge: [2/3] installing what running needs (requirements/runtime.lock, checked by their"
        " hashes)",
        "Collecting trio",
        "Installing collected packages: trio, edge",
        "edge: [3/3] installing edge itself",
        "edge: installed",
        "edge: serving on http://127.0.0.1:8080 with its data in ./edge-data (Ctrl-C stops)",
    ]
    assert "Downloading" not in ran.stdout  # the names, not pip's every line
    calls = (venv / "calls").read_text().splitlines()
    assert calls[-1] == "edge serve --host 127.0.0.1 --port 8080 --data ./edge-data"
    # only what running needs: no test or development tools
    assert not any("dev.lock" in call for call in calls)
    again = make(venv, "run")  # installed: straight to serving
    assert "installing" not in again.stdout and "edge: serving on" in again.stdout


def test_make_demo_keeps_its_data_apart(venv):
    ran = make(venv, "demo")
    assert ran.returncode == 0, ran.stderr
    calls = (venv / "calls").read_text().splitlines()
    assert calls[-1] == "edge serve --demo --host 127.0.0.1 --port 8080 --data ./edge-demo-data"


def test_a_failed_install_fails_and_says_why(venv):
    ran = make(venv, "run", FAIL_INSTALL="1")
    assert ran.returncode != 0
    assert "ERROR: no matching distribution" in ran.stderr
    assert "edge: installed" not in ran.stdout and not (venv / ".installed-runtime").exists()
