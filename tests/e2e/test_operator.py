"""An operator's view of every project (CONTRACT 4.6, 4.7): projects made with the command line
have no account, so an account sees none of them, until the operator makes it an operator
account (``edge account operator``); or the operator signs in to the dashboard with the admin
token. Both see every project, with its owner."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import pytest
from support.nodes import NodeProcess
from support.waits import bound

PASSWORD = "a long enough password"


def edge(data, *args: str, stdin: str = "", check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "edge", *args, "--data", str(data)],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=bound(30),
    )
    if check:
        assert done.returncode == 0, done.stderr
    return done


@pytest.fixture
def process(tmp_path):
    node = NodeProcess(tmp_path / "data").start()
    yield node
    node.terminate()


@contextmanager
def signed_in(url: str, email: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=url, timeout=bound(30.0)) as client:
        assert client.post("/api/accounts", json={"email": email, "password": PASSWORD}).is_success
        session = client.post("/api/session", json={"email": email, "password": PASSWORD})
        client.headers["Cm-Csrf"] = session.json()["csrfToken"]
        yield client


def cli_project(process: NodeProcess) -> str:
    return edge(
        process.data_dir, "project", "create", "--name", "CLI shop",
        "--success-url", "https://shop.example/ok", "--cancel-url", "https://shop.example/no",
        "--allowed-origin", "https://shop.example",
    ).stdout.strip()  # fmt: skip


def test_an_operator_account_sees_every_project_and_stops_when_turned_off(process):
    data = process.data_dir
    pid = cli_project(process)
    with signed_in(process.url, "ops@example.com") as ops:
        own = ops.post(
            "/api/manage/projects",
            json={
                "name": "Own shop",
                "successUrl": "https://own.example/ok",
                "cancelUrl": "https://own.example/no",
                "allowedOrigins": ["https://own.example"],
            },
        )
        assert own.status_code == 201
        assert "CLI shop" not in ops.get("/dashboard/").text
        assert ops.get(f"/dashboard/p/{pid}/").status_code == 404

        made = edge(data, "account", "operator", "ops@example.com")
        assert "operator: every project" in made.stdout
        page = ops.get("/dashboard/")
        assert "CLI shop" in page.text and "Own shop" in page.text
        assert "Operator: every project" in page.text
        assert "the operator (command line)" in page.text  # the CLI's project has no owner
        assert "ops@example.com" in page.text  # the other one is the account's own
        assert ops.get(f"/dashboard/p/{pid}/").status_code == 200
        assert ops.get(f"/api/projects/{pid}/transactions").status_code == 200
        listed = ops.get("/api/manage/projects").json()["items"]
        assert {p["id"]: p["owner"] for p in listed}[pid] is None

        edge(data, "account", "operator", "ops@example.com", "--off")
        assert ops.get(f"/dashboard/p/{pid}/").status_code == 404
        assert "CLI shop" not in ops.get("/dashboard/").text
        assert "Own shop" in ops.get("/dashboard/").text


def test_edge_account_create_operator_and_list(process):
    data = process.data_dir
    boss = edge(
        data, "account", "create", "--email", "boss@example.com", "--operator", "--json",
        stdin=PASSWORD + "\n",
    )  # fmt: skip
    assert '"operator": true' in boss.stdout
    edge(data, "account", "create", "--email", "plain@example.com", stdin=PASSWORD + "\n")
    listed = edge(data, "account", "list").stdout
    assert re.search(r"boss@example\.com .*operator", listed)
    assert "plain@example.com  (free)" in listed
    missing = edge(data, "account", "operator", "nobody@example.com", check=False)
    assert missing.returncode == 1 and "no account" in missing.stderr
    with signed_in(process.url, "someone@example.com") as someone:
        # only the operator makes operators
        refused = someone.get("/api/manage/accounts")
        assert refused.status_code == 403
        account_id = boss.stdout.split('"accountId": "')[1].split('"')[0]
        patched = someone.patch(f"/api/manage/accounts/{account_id}", json={"operator": False})
        assert patched.status_code == 403
        forged = httpx.post(
            f"{process.url}/api/accounts",
            json={"email": "sneaky@example.com", "password": PASSWORD, "operator": True},
        )
        assert forged.status_code == 400 and forged.json()["error"]["code"] == "unknown_field"


def test_the_operator_signs_in_to_the_dashboard_with_the_admin_token(process):
    pid = cli_project(process)
    with httpx.Client(base_url=process.url, timeout=bound(30.0)) as browser:
        wrong = browser.post("/dashboard/login/operator", data={"token": "not-the-token"})
        assert wrong.status_code == 401 and "not the node" in wrong.text
        signed = browser.post("/dashboard/login/operator", data={"token": process.admin_token})
        assert (signed.status_code, signed.headers["location"]) == (303, "/dashboard/")
        page = browser.get("/dashboard/")
        assert "CLI shop" in page.text and "Operator: every project" in page.text
        assert browser.get(f"/dashboard/p/{pid}/methods").status_code == 200
        login = browser.get("/dashboard/login")
        assert login.status_code == 303  # signed in already
