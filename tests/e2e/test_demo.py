"""`edge serve --demo`: simulators and a demo shop wired to a test project, no provider account."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time

import httpx


def _start_demo(data) -> tuple[subprocess.Popen[str], dict[str, str]]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "edge", "serve", "--demo", "--port", "0", "--data", str(data)],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )
    assert proc.stdout is not None
    found: dict[str, str] = {}
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and len(found) < 4:
        line = proc.stdout.readline()
        for name in ("shop page", "node", "project", "test key"):
            match = re.match(rf"\s+{name}:\s+(\S+)", line)
            if match:
                found[name] = match.group(1).rstrip("/")
    assert len(found) == 4, found
    return proc, found


def _stop(proc: subprocess.Popen[str]) -> int:
    proc.send_signal(signal.SIGINT)
    code = proc.wait(timeout=20)
    assert proc.stdout is not None
    proc.stdout.close()
    return code


def test_demo_shop_buys_with_simulated_card_and_reaches_succeeded(tmp_path):
    proc, demo = _start_demo(tmp_path / "data")
    try:
        node, project, key = demo["node"], demo["project"], demo["test key"]
        page = httpx.get(demo["shop page"] + "/")
        assert page.status_code == 200
        assert f'project="{project}"' in page.text and "<cm-button" in page.text
        assert re.search(r'<script src="[^"]+/button\.js" integrity="sha384-[^"]+" crossorigin="anonymous">', page.text)
        info = httpx.get(f"{node}/api/projects/{project}/public-info", params={"productId": "book", "mode": "test"}).json()
        assert [p["provider"] for p in info["providers"]] == ["stripe", "manual"]
        # what the button does after the buyer picks "Card"
        checkout = httpx.post(f"{node}/api/checkout/stripe/{project}", json={
            "productId": "book", "mode": "test", "metadata": {"customerRef": "demo-buyer"}}).json()
        paid = httpx.post(checkout["url"] + "/pay", follow_redirects=False)
        assert paid.headers["location"].startswith(demo["shop page"] + "/thanks")
        assert httpx.get(paid.headers["location"]).status_code == 200
        status = httpx.get(f"{node}/status/{project}/{checkout['txId']}").json()
        assert status["status"] == "succeeded"
        events = httpx.get(f"{node}/api/projects/{project}/events", headers={"Authorization": f"Bearer {key}"}).json()
        assert any(e["type"] == "payment.succeeded" and e["customerRef"] == "demo-buyer" for e in events["items"])
    finally:
        assert _stop(proc) == 0

    # a second start keeps the project and rewires it to the new simulator
    proc, again = _start_demo(tmp_path / "data")
    try:
        assert again["project"] == demo["project"] and again["test key"] != demo["test key"]
        old_key = httpx.get(f"{again['node']}/api/projects/{project}/transactions",
                            headers={"Authorization": f"Bearer {demo['test key']}"})
        assert old_key.status_code == 401  # the previous demo key was revoked
        checkout = httpx.post(f"{again['node']}/api/checkout/stripe/{project}", json={"productId": "book", "mode": "test"}).json()
        httpx.post(checkout["url"] + "/pay", follow_redirects=False)
        assert httpx.get(f"{again['node']}/status/{project}/{checkout['txId']}").json()["status"] == "succeeded"
    finally:
        _stop(proc)
