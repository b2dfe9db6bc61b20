"""``make binary``'s one file runs the node with nothing else installed: started with an empty
environment from a directory of its own, it serves, and the pay-by-mail path goes through it
(its own command line sets the shop up; a buyer checks out; the merchant marks the mailed
payment paid; the status is succeeded).

It needs the built file (``dist/edge``, or ``EDGE_BINARY``): without one it skips, unless
``EDGE_REQUIRE_BINARY=1`` (CI builds it first and sets that), where that is a failure."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from support.waits import bound

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def binary(tmp_path: Path) -> Path:
    built = Path(os.environ.get("EDGE_BINARY") or REPO / "dist" / "edge")
    if not built.is_file():
        if os.environ.get("EDGE_REQUIRE_BINARY") == "1":
            pytest.fail(f"no binary at {built}; EDGE_REQUIRE_BINARY=1 requires it (make binary)")
        pytest.skip(f"no binary at {built} (make binary builds it)")
    alone = tmp_path / "bin" / "edge"  # away from the source tree and its virtual environment
    alone.parent.mkdir()
    shutil.copy2(built, alone)
    return alone


def run(binary: Path, *args: str, cwd: Path) -> str:
    done = subprocess.run(
        [str(binary), *args],
        capture_output=True,
        text=True,
        timeout=bound(60),
        cwd=cwd,
        env={"PATH": "/usr/bin:/bin", "HOME": str(cwd)},  # no Python, no venv, nothing of ours
    )
    assert done.returncode == 0, (args, done.stderr)
    return done.stdout.strip()


@pytest.fixture
def serving(binary: Path, tmp_path: Path) -> Iterator[tuple[Path, str]]:
    data = tmp_path / "data"
    with open(tmp_path / "node.log", "wb") as log:
        node = subprocess.Popen(
            [str(binary), "serve", "--port", "0", "--data", str(data)],
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=tmp_path,
            env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
        )
    try:
        deadline = time.monotonic() + bound(60)
        while not (data / "node.json").exists():
            assert node.poll() is None, (tmp_path / "node.log").read_text()
            assert time.monotonic() < deadline, "the binary's node did not start"
            time.sleep(0.1)
        yield data, json.loads((data / "node.json").read_text())["url"]
    finally:
        node.terminate()
        assert node.wait(timeout=bound(30)) == 0


def test_the_binary_serves_and_takes_a_mailed_payment(binary, serving, tmp_path):
    data, url = serving
    assert run(binary, "--version", cwd=tmp_path).startswith("edge ")
    edge = ("--data", str(data))
    pid = run(
        binary, "project", "create", "--name", "Shop",
        "--success-url", "https://shop.example/ok", "--cancel-url", "https://shop.example/no",
        "--allowed-origin", "https://shop.example", *edge, cwd=tmp_path,
    )  # fmt: skip
    run(binary, "product", "set", pid, "book", "--name", "Book", "--amount", "19.99",
        "--currency", "EUR", *edge, cwd=tmp_path)  # fmt: skip
    run(binary, "provider", "set", pid, "manual", "--mode", "live", "--address-name", "Shop Ltd",
        "--address-line", "1 Main St", "--address-country", "GB", *edge, cwd=tmp_path)  # fmt: skip
    key = run(binary, "key", "create", pid, "--mode", "live", *edge, cwd=tmp_path).split()[0]
    assert httpx.get(f"{url}/button.js", follow_redirects=True).status_code == 200
    checkout = httpx.post(f"{url}/api/checkout/manual/{pid}", json={"productId": "book"}).json()
    assert checkout["type"] == "reference" and checkout["mailingAddress"]["name"] == "Shop Ltd"
    run(binary, "tx", "mark-paid", pid, checkout["txId"], *edge, cwd=tmp_path)
    status = httpx.get(
        f"{url}/status/{pid}/{checkout['txId']}", headers={"Authorization": f"Bearer {key}"}
    ).json()
    assert (status["status"], status["version"]) == ("succeeded", 2)
