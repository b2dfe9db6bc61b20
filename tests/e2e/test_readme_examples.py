"""The README's examples, taken out of the README and run, so they cannot drift from the node:
the command-line setup against a running node, the polling function against a paid checkout,
and the page example "Without the button" in a real Chromium against ``edge serve --demo``."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import trio
from browser.harness import in_browser, require_browser
from support.nodes import DemoProcess, NodeProcess

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()


def example(after: str, language: str) -> str:
    """The first ``language`` code block after the line ``after``."""
    section = README[README.index(after) :]
    found = re.search(rf"^```{language}\n(.*?)^```", section, re.MULTILINE | re.DOTALL)
    assert found, f"no {language} block after {after!r}"
    return found.group(1)


def test_the_command_line_setup_runs_as_written(tmp_path):
    node = NodeProcess(tmp_path / "edge-data").start()  # `make run`'s data dir: ./edge-data
    try:
        bin_dir = tmp_path / ".venv" / "bin"
        bin_dir.mkdir(parents=True)
        (bin_dir / "edge").symlink_to(Path(sys.executable).parent / "edge")
        script = example("## Set up a shop with the command line", "sh")
        ran = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", script + '\necho "P=$P"\n'],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"},
        )
        assert ran.returncode == 0, ran.stderr
        project = re.search(r"^P=(prj_\w+)$", ran.stdout, re.MULTILINE)
        assert project, ran.stdout
        pid = project.group(1)
        assert re.search(r"^cmk_test_\w+", ran.stdout, re.MULTILINE)  # the key, shown once
        assert f'project="{pid}"' in ran.stdout and 'mode="test"' in ran.stdout
        assert f'src="{node.url}/button.js"' in ran.stdout
        assert re.search(rf"^{pid}  free\s+Shop  manual, stripe$", ran.stdout, re.MULTILINE)
        info = httpx.get(
            f"{node.url}/api/projects/{pid}/public-info", params={"mode": "test"}
        ).json()
        assert {p["provider"] for p in info["providers"]} == {"stripe", "manual"}
    finally:
        node.terminate()


def test_the_polling_example_returns_once_paid(tmp_path):
    node = NodeProcess(tmp_path / "data").start()
    try:
        admin = httpx.Client(
            base_url=node.url, headers={"Authorization": f"Bearer {node.admin_token}"}
        )
        with admin:
            pid = admin.post(
                "/api/manage/projects",
                json={
                    "name": "Shop",
                    "successUrl": "https://shop.example/ok",
                    "cancelUrl": "https://shop.example/no",
                    "allowedOrigins": ["https://shop.example"],
                },
            ).json()["id"]
            product = {"name": "Book", "kind": "payment", "amount": 5, "currency": "EUR"}
            admin.put(f"/api/manage/projects/{pid}/products/book", json=product)
            address = {"name": "Shop", "lines": ["1 Road"], "country": "GB"}
            admin.put(
                f"/api/manage/projects/{pid}/providers/manual",
                json={"enabled": True, "live": {"mailingAddress": address}},
            )
            key = admin.post(f"/api/manage/projects/{pid}/keys", json={"mode": "live"}).json()
        checkout = httpx.post(
            f"{node.url}/api/checkout/manual/{pid}", json={"productId": "book"}
        ).json()
        namespace: dict[str, Any] = {}
        exec(example("The polling pattern", "python"), namespace)  # noqa: S102 - our own README
        wait_for_payment = namespace["wait_for_payment"]
        assert wait_for_payment(node.url, pid, checkout["txId"], key["key"], timeout_s=0) == (
            "timeout"
        )
        httpx.post(
            f"{node.url}/api/projects/{pid}/transactions/{checkout['txId']}/mark-paid",
            headers={"Authorization": f"Bearer {key['key']}"},
        ).raise_for_status()
        assert wait_for_payment(node.url, pid, checkout["txId"], key["key"]) == "succeeded"
    finally:
        node.terminate()


async def test_the_page_example_without_the_button_runs_against_the_demo(tmp_path):
    require_browser()
    demo = await trio.to_thread.run_sync(DemoProcess, tmp_path / "data")
    try:
        code = example("#### Without the button", "js")
        code = code.replace("'https://pay.example.com'", repr(demo.found["node"]))
        code = code.replace("'prj_...'", repr(demo.found["project"]))

        def page_runs(page: Any) -> Any:
            page.goto(demo.found["shop page"] + "/")  # an origin of the project
            return page.evaluate(f"async () => {{ {code}; return {{info, checkout, status}}; }}")

        ran = await in_browser(page_runs)
    finally:
        await trio.to_thread.run_sync(demo.stop)
    assert "manual" in [p["provider"] for p in ran["info"]["providers"]]
    assert (ran["checkout"]["type"], ran["checkout"]["isTest"]) == ("reference", True)
    assert ran["status"]["status"] == "pending" and ran["status"]["id"] == ran["checkout"]["txId"]
