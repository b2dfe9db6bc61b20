"""The node as a wheel installs it, away from the source tree.

The wheel is built from ``pyproject.toml`` and ``edge/`` alone (copied aside, as the
Containerfile's build stage does), installed into a new virtual environment, and that
environment's ``edge`` command serves a node from a temporary directory. The new environment
gets the package from the wheel only; its dependencies come from the environment running the
tests (a ``.pth`` file written after the install), so the test needs no index beyond the one
pip uses to build the wheel (setuptools, for build isolation).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from support.waits import bound

REPO = Path(__file__).resolve().parents[2]
BUTTON = Path("edge", "static", "button", "cm-button.js")
KEYS_MARKER = "/*@signing-keys*/[]"
CATALOGUES_MARKER = "/*@catalogues*/{}"
UNKNOWN_TX = "tx_01JD0000000000000000000000"


def _run(args: list[str | Path], cwd: Path, timeout: float = 180) -> str:
    result = subprocess.run(
        [str(a) for a in args],
        cwd=cwd,
        env=_clean_env(),
        capture_output=True,
        text=True,
        timeout=bound(timeout),
    )
    assert result.returncode == 0, f"{args}:\n{result.stdout}\n{result.stderr}"
    return result.stdout


def _clean_env() -> dict[str, str]:
    """Nothing that would point a child at the source tree or another node's settings."""
    return {
        name: value
        for name, value in os.environ.items()
        if name not in ("PYTHONPATH", "PYTHONHOME") and not name.startswith("EDGE_")
    }


def _source_files() -> set[str]:
    return {
        path.relative_to(REPO).as_posix()
        for path in (REPO / "edge").rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"
    }


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    source = tmp_path_factory.mktemp("source")
    shutil.copy(REPO / "pyproject.toml", source)
    shutil.copytree(
        REPO / "edge", source / "edge", ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
    )
    dist = tmp_path_factory.mktemp("dist")
    _run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", dist, source],
        cwd=dist,
    )
    (built,) = dist.glob("edge-*.whl")
    return built


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("venv")
    _run([sys.executable, "-m", "venv", "--without-pip", root], cwd=root)
    python = root / "bin" / "python"
    # Installed before the .pth below exists: pip must not see (and replace) the tests' own edge.
    _run(
        [sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-deps", wheel],
        cwd=root,
    )
    site = _run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], root)
    dependencies = dict.fromkeys([sysconfig.get_path("purelib"), sysconfig.get_path("platlib")])
    # Lines of a .pth file are appended to sys.path after the venv's own site-packages, and the
    # .pth files inside them are not run: the tests' editable install of edge stays invisible.
    (Path(site.strip()) / "edge_test_dependencies.pth").write_text("\n".join(dependencies) + "\n")
    return root


@pytest.fixture
def served(venv: Path, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """``edge serve`` from the new environment's entry point, on port 0; (url, data dir)."""
    data = tmp_path / "data"
    log_path = tmp_path / "node.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [venv / "bin" / "edge", "serve", "--port", "0", "--data", data],
            cwd=tmp_path,
            env=_clean_env(),
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + bound(30)
        url = ""
        while not url:
            assert proc.poll() is None, f"the node exited:\n{log_path.read_text()}"
            assert time.monotonic() < deadline, f"the node did not start:\n{log_path.read_text()}"
            try:
                url = json.loads((data / "node.json").read_text())["url"]
            except (OSError, ValueError, KeyError):
                time.sleep(0.05)
        yield url, data
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=bound(20)) == 0, log_path.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=bound(10))


def test_the_wheel_carries_every_file_of_the_package(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        packed = {name for name in archive.namelist() if name.startswith("edge/")}
        assert archive.read(BUTTON.as_posix()) == (REPO / BUTTON).read_bytes()
    assert packed == _source_files()


def test_the_installed_node_serves_the_button_and_status(
    venv: Path, served: tuple[str, Path], tmp_path: Path
) -> None:
    url, data = served
    imported = _run(
        [venv / "bin" / "python", "-c", "import edge.http.button as b; print(b.__file__)"],
        cwd=tmp_path,
    )
    assert Path(imported.strip()).is_relative_to(venv)
    assert (venv / "bin" / "edge").read_text().startswith(f"#!{venv / 'bin' / 'python'}")
    packaged = next(venv.glob(f"lib/python*/site-packages/{BUTTON.as_posix()}")).read_text()
    before, rest = packaged.split(KEYS_MARKER)
    between, after = rest.split(CATALOGUES_MARKER)

    with httpx.Client(base_url=url, timeout=bound(10)) as http:
        current = http.get("/button.js")
        assert current.status_code == 302
        script = http.get(current.headers["location"])
        assert script.status_code == 200
        assert script.headers["content-type"].startswith("text/javascript")
        body = script.text
        # the packaged file with the node's public keys and the buyer's words filled in, nothing
        # else
        assert body.startswith(before) and body.endswith(after)
        keys_json, catalogues_json = body[len(before) : len(body) - len(after)].split(between)
        keys = json.loads(keys_json)
        catalogues = json.loads(catalogues_json)
        assert catalogues["pl"]["list.prompt"] == "Wybierz sposób płatności"  # package data
        jwks = http.get("/.well-known/cm-signing-keys").json()
        assert [k["kid"] for k in keys] == [k["kid"] for k in jwks["keys"]]
        assert http.get("/static/icons/card.svg").status_code == 200

        admin = {"Authorization": f"Bearer {(data / 'admin-token').read_text().strip()}"}
        project = http.post(
            "/api/manage/projects",
            headers=admin,
            json={
                "name": "Shop",
                "successUrl": "https://shop.example/thanks",
                "cancelUrl": "https://shop.example/cart",
                "allowedOrigins": ["https://shop.example"],
            },
        )
        assert project.status_code == 201, project.text
        pid = project.json()["id"]
        manage = f"/api/manage/projects/{pid}"
        product = {"name": "Book", "kind": "payment", "amount": 19.99, "currency": "EUR"}
        assert http.put(f"{manage}/products/book", headers=admin, json=product).is_success
        address = {"name": "Shop Ltd", "lines": ["1 Main St"], "country": "GB"}
        manual = {"enabled": True, "live": {"mailingAddress": address}}
        assert http.put(f"{manage}/providers/manual", headers=admin, json=manual).is_success
        checkout = http.post(f"/api/checkout/manual/{pid}", json={"productId": "book"})
        assert checkout.status_code == 201, checkout.text
        status = http.get(f"/status/{pid}/{checkout.json()['txId']}")
        assert status.status_code == 200
        assert status.json()["status"] == "pending"
        unknown = http.get(f"/status/{pid}/{UNKNOWN_TX}")
        assert unknown.status_code == 404
        assert unknown.json()["error"]["code"] == "not_found"

    printed = json.loads(
        _run([venv / "bin" / "edge", "button", "--data", data, "--json"], tmp_path)
    )
    digest = base64.b64encode(hashlib.sha384(script.content).digest()).decode()
    assert printed["integrity"] == f"sha384-{digest}"
