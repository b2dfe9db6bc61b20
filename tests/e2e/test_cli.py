"""The `edge` command line against a running node, as the README shows it."""

from __future__ import annotations

import json
import subprocess
import sys

import httpx
import pytest
from support.nodes import NodeProcess


def edge(data, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [sys.executable, "-m", "edge", *args, "--data", str(data)],
        capture_output=True,
        text=True,
        timeout=30,
    )
    if check:
        assert result.returncode == 0, result.stderr
    return result


@pytest.fixture
def process(tmp_path):
    node = NodeProcess(tmp_path / "data").start()
    yield node
    node.terminate()


def test_cli_sets_up_a_shop_and_marks_a_mailed_payment_paid(process):
    data = process.data_dir
    pid = edge(
        data,
        "project",
        "create",
        "--name",
        "Shop",
        "--success-url",
        "https://shop.example/ok",
        "--cancel-url",
        "https://shop.example/no",
        "--allowed-origin",
        "https://shop.example",
    ).stdout.strip()
    assert pid.startswith("prj_")
    product = json.loads(
        edge(
            data,
            "product",
            "set",
            pid,
            "book",
            "--name",
            "Book",
            "--amount",
            "19.99",
            "--currency",
            "EUR",
            "--json",
        ).stdout
    )
    assert product["amount"] == 19.99
    edge(
        data,
        "provider",
        "set",
        pid,
        "manual",
        "--address-name",
        "Shop Ltd",
        "--address-line",
        "1 Main St",
        "--address-country",
        "GB",
    )
    key = json.loads(edge(data, "key", "create", pid, "--mode", "live", "--json").stdout)
    assert key["key"].startswith("cmk_live_")

    created = httpx.post(
        f"{process.url}/api/checkout/manual/{pid}",
        json={"productId": "book", "metadata": {"customerRef": "u-7"}},
    )
    tx = created.json()["txId"]
    listing = edge(data, "tx", "list", pid).stdout
    assert tx in listing and "pending" in listing and "u-7" in listing
    paid = json.loads(edge(data, "tx", "mark-paid", pid, tx, "--json").stdout)
    assert paid["status"] == "succeeded"
    events = json.loads(edge(data, "events", pid, "--json").stdout)
    assert [e["type"] for e in events["items"]] == ["checkout.created", "manual.marked_paid"]

    again = edge(data, "tx", "mark-paid", pid, tx, check=False)
    assert again.returncode == 1
    assert again.stderr.strip().startswith("edge: 422 invalid_transition")
    assert len(again.stderr.strip().splitlines()) == 1
    revoked = edge(data, "key", "revoke", pid, key["keyId"])
    assert key["keyId"] in revoked.stdout
    bad = edge(
        data,
        "product",
        "set",
        pid,
        "book",
        "--name",
        "Book",
        "--amount",
        "1.001",
        "--currency",
        "EUR",
        check=False,
    )
    assert bad.returncode == 1 and "invalid_amount" in bad.stderr


def test_cli_without_a_running_node_says_so(tmp_path):
    result = edge(tmp_path / "nothing", "tx", "list", "prj_aaaaaaaaaaaaaaaa", check=False)
    assert result.returncode == 1
    assert result.stderr.startswith("edge: no running node found")
    assert len(result.stderr.strip().splitlines()) == 1


def test_edge_button_prints_the_snippet_with_the_served_scripts_hash(process):
    import base64
    import hashlib

    printed = json.loads(
        edge(
            process.data_dir,
            "button",
            "--project",
            "prj_aaaaaaaaaaaaaaaa",
            "--product",
            "book",
            "--json",
        ).stdout
    )
    assert f'src="{process.url}/button.js"' in printed["snippet"]
    assert f'integrity="{printed["integrity"]}"' in printed["snippet"]
    served = httpx.get(f"{process.url}/button.js", follow_redirects=True)
    assert served.status_code == 200
    digest = "sha384-" + base64.b64encode(hashlib.sha384(served.content).digest()).decode()
    assert digest == printed["integrity"]
