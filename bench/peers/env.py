"""The peers' own packages, kept apart from the project's: a Python venv for the FastAPI peers
and an npm install for the Express peer, both under ``bench/results/peers-env`` (git ignores
``bench/results``), from ``requirements.txt`` and ``package.json`` with its
``package-lock.json`` beside this file (every version pinned, each npm package checked by its
hash).

Neither goes into the project's locks: they are what a merchant's app would install, not what
edge needs. Each install is stamped with the hash of the files it came from, so a later run
installs again only when they changed, or when the project's venv stands on another
interpreter (the peers run on the node's CPython, whichever build that is).
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ENV = HERE.parent / "results" / "peers-env"
REQUIREMENTS = HERE / "requirements.txt"
PACKAGE_JSON = HERE / "package.json"
PACKAGE_LOCK = HERE / "package-lock.json"


@dataclass(frozen=True)
class PeersEnv:
    python: Path  # the venv's interpreter
    node_modules: Path


def _digest(*paths: Path, base: Path | None = None) -> str:
    seen = b"".join(path.read_bytes() for path in paths) + (bytes(base) if base else b"")
    return hashlib.sha256(seen).hexdigest()


def _stale(stamp: Path, *sources: Path, base: Path | None = None) -> bool:
    return not stamp.exists() or stamp.read_text().strip() != _digest(*sources, base=base)


def _run(argv: list[str], what: str) -> None:
    print(f"peers: installing {what}", flush=True)
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"peers: installing {what} failed:\n{done.stdout[-3000:]}{done.stderr[-3000:]}")


def ensure() -> PeersEnv:
    """Install what is missing or out of date; the paths the peers run from."""
    venv, node = ENV / "python", ENV / "node"
    python = venv / "bin" / "python"
    stamp = venv / ".installed"
    # the machine's interpreter behind the project's venv, not the project's packages
    base = Path(getattr(sys, "_base_executable", sys.executable)).resolve()
    if _stale(stamp, REQUIREMENTS, base=base) or not python.exists():
        shutil.rmtree(venv, ignore_errors=True)
        _run([str(base), "-m", "venv", str(venv)], f"a venv at {venv}")
        _run(
            [str(python), "-m", "pip", "install", "-q", "-r", str(REQUIREMENTS)],
            "FastAPI, uvicorn, stripe and psycopg (requirements.txt)",
        )
        stamp.write_text(_digest(REQUIREMENTS, base=base) + "\n")
    stamp = node / ".installed"
    if _stale(stamp, PACKAGE_JSON, PACKAGE_LOCK) or not (node / "node_modules").exists():
        if shutil.which("npm") is None:
            sys.exit("peers: npm is not installed (make bench-peers installs it: apt-get)")
        shutil.rmtree(node, ignore_errors=True)
        node.mkdir(parents=True)
        for source in (PACKAGE_JSON, PACKAGE_LOCK):
            shutil.copyfile(source, node / source.name)
        _run(
            ["npm", "ci", "--prefix", str(node), "--omit=dev", "--no-audit", "--no-fund"],
            "express, stripe and pg (package.json, package-lock.json)",
        )
        stamp.write_text(_digest(PACKAGE_JSON, PACKAGE_LOCK) + "\n")
    return PeersEnv(python, node / "node_modules")
