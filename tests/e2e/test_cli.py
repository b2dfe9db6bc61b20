"""The `edge` command line against a running node, as the README shows it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import httpx
import pyotp
import pytest
from support.nodes import NodeProcess
from support.waits import bound


def edge(data, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [sys.executable, "-m", "edge", *args, "--data", str(data)],
        capture_output=True,
        text=True,
        timeout=bound(30),
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
        "--mode",
        "live",
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


def test_a_bad_value_is_one_line_naming_it(tmp_path):
    """CONTRACT 10: a bad value is one line naming the cause, not argparse's usage block."""
    for args in (("tx", "list", "prj_aaaaaaaaaaaaaaaa", "--limit", "abc"), ("tx", "list")):
        result = edge(tmp_path / "nothing", *args, check=False)
        assert result.returncode == 2 and result.stdout == "", args
        line = result.stderr.strip()
        assert len(line.splitlines()) == 1 and line.startswith("edge tx list: "), line
    assert (
        "--limit: invalid int value: 'abc'"
        in edge(tmp_path, "tx", "list", "p", "--limit", "abc", check=False).stderr
    )


def test_another_node_is_reached_with_node_and_the_token_in_the_environment(process, tmp_path):
    """``--node URL`` with ``EDGE_ADMIN_TOKEN``, from a machine with no data dir of that node."""
    elsewhere = tmp_path / "elsewhere"
    command = [sys.executable, "-m", "edge", "project", "list", "--json", "--data", str(elsewhere)]

    def list_with(token: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*command, "--node", process.url],
            capture_output=True,
            text=True,
            env={**os.environ, "EDGE_ADMIN_TOKEN": token},
            timeout=bound(30),
        )

    listed = list_with(process.admin_token)
    assert listed.returncode == 0, listed.stderr
    assert "items" in json.loads(listed.stdout)
    refused = list_with("wrong")
    assert refused.returncode == 1 and len(refused.stderr.strip().splitlines()) == 1


def _shop(data) -> str:
    pid = edge(
        data,
        "project", "create", "--name", "Shop",
        "--success-url", "https://shop.example/ok", "--cancel-url", "https://shop.example/no",
        "--allowed-origin", "https://shop.example",
    ).stdout.strip()  # fmt: skip
    edge(
        data, "product", "set", pid, "book", "--name", "Book", "--amount", "5", "--currency", "EUR"
    )
    return pid


def test_edge_button_prints_the_snippet_with_the_served_scripts_hash(process):
    import base64
    import hashlib

    pid = _shop(process.data_dir)
    printed = json.loads(
        edge(process.data_dir, "button", "--project", pid, "--product", "book", "--json").stdout
    )
    assert f'src="{process.url}/button.js"' in printed["snippet"]
    assert f'project="{pid}"' in printed["snippet"]
    assert f'integrity="{printed["integrity"]}"' in printed["snippet"]
    served = httpx.get(f"{process.url}/button.js", follow_redirects=True)
    assert served.status_code == 200
    digest = "sha384-" + base64.b64encode(hashlib.sha384(served.content).digest()).decode()
    assert digest == printed["integrity"]


def test_edge_project_tier_moves_a_project(process):
    data = process.data_dir
    pid = _shop(data)
    moved = edge(data, "project", "tier", pid, "pro")
    assert moved.stdout.strip() == f"{pid} is on the pro tier"
    usage = json.loads(edge(data, "project", "show", pid, "--json").stdout)
    assert usage["tier"] == "pro"
    refused = edge(data, "project", "tier", pid, "platinum", check=False)
    assert refused.returncode == 1 and "400" in refused.stderr


def test_edge_button_warns_when_no_method_is_offered_in_its_mode(process):
    data = process.data_dir
    pid = _shop(data)
    printed = edge(data, "button", "--project", pid, "--product", "book")
    assert "offers no payment method in live mode" in printed.stderr
    assert "--mode test" in printed.stderr and "<cm-button" in printed.stdout
    address = ("--address-name", "Shop", "--address-line", "1 Road", "--address-country", "GB")
    edge(data, "provider", "set", pid, "manual", *address)  # test mode unless told
    printed = edge(data, "button", "--project", pid, "--product", "book")
    assert "offers no payment method in live mode" in printed.stderr
    assert edge(data, "button", "--project", pid, "--mode", "test").stderr == ""
    edge(
        data, "provider", "set", pid, "manual", "--mode", "live",
        "--address-name", "Shop", "--address-line", "1 Road", "--address-country", "GB",
    )  # fmt: skip
    assert edge(data, "button", "--project", pid, "--product", "book").stderr == ""


def test_edge_button_refuses_what_would_fail_in_the_browser(process, tmp_path):
    data = process.data_dir
    pid = _shop(data)
    for args, said in [
        (("--project", "prj_aaaaaaaaaaaaaaaa"), "404 project_not_found"),
        (("--project", pid, "--product", "nope"), f"{pid} has no product nope"),
    ]:
        refused = edge(data, "button", *args, check=False)
        assert refused.returncode == 1 and refused.stdout == "", args
        assert said in refused.stderr and len(refused.stderr.strip().splitlines()) == 1
    elsewhere = tmp_path / "not-the-data-dir"
    elsewhere.mkdir()
    wrong = edge(elsewhere, "button", "--project", pid, check=False)
    assert wrong.returncode == 1 and "no signing key" in wrong.stderr
    assert list(elsewhere.iterdir()) == []  # no new key whose hash browsers would reject


def test_edge_button_puts_the_public_address_in_the_snippet(tmp_path):
    node = NodeProcess(tmp_path / "data", env={"EDGE_PUBLIC_URL": "https://pay.example"}).start()
    try:
        pid = _shop(node.data_dir)
        snippet = edge(node.data_dir, "button", "--project", pid, "--product", "book").stdout
        assert 'src="https://pay.example/button.js"' in snippet
        proxied = subprocess.run(
            [sys.executable, "-m", "edge", "button", "--data", str(node.data_dir)],
            capture_output=True,
            text=True,
            timeout=bound(30),
            env={**os.environ, "EDGE_PUBLIC_URL": "https://shop-pay.example/"},
        )
        assert 'src="https://shop-pay.example/button.js"' in proxied.stdout
    finally:
        node.terminate()


def test_cli_shows_keys_transactions_and_refused_deliveries(process):
    data = process.data_dir
    pid = _shop(data)
    edge(
        data, "provider", "set", pid, "manual",
        "--address-name", "Shop", "--address-line", "1 Road", "--address-country", "GB",
    )  # fmt: skip
    edge(
        data, "provider", "set", pid, "stripe", "--mode", "test", "--set", "webhookSecret=whsec_x1"
    )
    key = edge(data, "key", "create", pid, "--mode", "test", "--name", "server").stdout.split()[0]
    listed = edge(data, "key", "list", pid).stdout
    assert "test" in listed and key[-4:] in listed and key not in listed  # never the key itself
    checkout = httpx.post(
        f"{process.url}/api/checkout/manual/{pid}",
        json={"productId": "book"},
        headers={"Authorization": f"Bearer {key}"},
    ).json()
    canceled = edge(data, "tx", "cancel", pid, checkout["txId"]).stdout
    assert "canceled (version 2) 5.00 EUR" in canceled  # the currency's own decimals
    assert f"{checkout['txId']}  canceled" in edge(data, "tx", "list", pid).stdout
    shown = edge(data, "tx", "show", pid, checkout["txId"]).stdout
    assert "checkout.created" in shown and "checkout.canceled" in shown
    httpx.post(f"{process.url}/webhook/stripe/{pid}", content=b"{}")  # no signature header
    refused = edge(data, "deliveries", pid).stdout
    assert "stripe  signature_invalid: missing_header" in refused
    assert json.loads(edge(data, "project", "show", pid, "--json").stdout)["id"] == pid
    # the id is found again by the project's name
    assert f"{pid}  free     Shop  manual, stripe" in edge(data, "project", "list").stdout
    assert "book  5.00 EUR  payment  Book" in edge(data, "product", "list", pid).stdout
    stripe = edge(data, "provider", "show", pid, "stripe").stdout
    assert "stripe  enabled" in stripe and "test.webhookSecret: set, ...c_x1" in stripe
    assert "whsec_x1" not in stripe  # a secret is never shown
    unknown = edge(data, "provider", "show", pid, "paypal", check=False)
    assert unknown.returncode == 1 and "not configured" in unknown.stderr
    missing = edge(data, "tx", "show", pid, "tx_01JD0000000000000000000000", check=False)
    assert missing.returncode == 1 and len(missing.stderr.strip().splitlines()) == 1


def test_edge_events_follow_prints_each_new_event_as_it_is_stored(process):
    import signal

    data = process.data_dir
    pid = _shop(data)
    edge(
        data, "provider", "set", pid, "manual",
        "--address-name", "Shop", "--address-line", "1 Road", "--address-country", "GB",
    )  # fmt: skip
    with subprocess.Popen(
        [sys.executable, "-m", "edge", "events", pid, "--follow", "--json", "--data", str(data)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # Ctrl-C as at a terminal, also when the suite runs in the background (a shell's
        # background job starts with SIGINT ignored, and Python then installs no handler)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    ) as follower:
        assert follower.stdout is not None and follower.stderr is not None
        try:
            first = httpx.post(
                f"{process.url}/api/checkout/manual/{pid}",
                json={"productId": "book", "mode": "test"},
            ).json()
            line = json.loads(follower.stdout.readline())
            assert (line["type"], line["txId"]) == ("checkout.created", first["txId"])
            second = httpx.post(
                f"{process.url}/api/checkout/manual/{pid}",
                json={"productId": "book", "mode": "test"},
            ).json()
            assert json.loads(follower.stdout.readline())["txId"] == second["txId"]
        finally:
            follower.send_signal(signal.SIGINT)
            try:
                ended = follower.wait(timeout=bound(10))
            except subprocess.TimeoutExpired:
                follower.kill()  # never left behind to hang the suite
                raise
            assert ended == 0  # Ctrl-C ends it quietly
        assert "Traceback" not in follower.stderr.read()


def test_edge_account_create_reads_the_password_from_stdin(process):
    made = subprocess.run(
        [sys.executable, "-m", "edge", "account", "create", "--email", "op@example.com",
         "--data", str(process.data_dir), "--json"],
        input="a long enough password\n", capture_output=True, text=True, timeout=bound(30),
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    assert json.loads(made.stdout)["email"] == "op@example.com"
    session = httpx.post(
        f"{process.url}/api/session",
        json={"email": "op@example.com", "password": "a long enough password"},
    )
    assert session.status_code == 200
    short = subprocess.run(
        [sys.executable, "-m", "edge", "account", "create", "--email", "x@example.com",
         "--data", str(process.data_dir)],
        input="short\n", capture_output=True, text=True, timeout=bound(30),
    )  # fmt: skip
    assert short.returncode == 1 and "at least 10 characters" in short.stderr


def test_operator_output_shows_control_characters_escaped_never_raw(process):
    token = process.admin_token
    name = "Shop\x1b[2J\x1b]0;pwned\x07\u202eevil"
    made = httpx.post(
        f"{process.url}/api/manage/projects",
        headers={"Authorization": f"Bearer {token}"},
        json={
            "name": name,
            "successUrl": "https://shop.example/ok",
            "cancelUrl": "https://shop.example/no",
            "allowedOrigins": ["https://shop.example"],
        },
    )
    assert made.status_code == 201
    pid = made.json()["id"]
    for args in (("project", "list"), ("project", "show", pid)):
        shown = edge(process.data_dir, *args).stdout
        assert "\x1b" not in shown and "\x07" not in shown and "\u202e" not in shown, args
        assert "Shop\\x1b[2J\\x1b]0;pwned\\x07\\u202eevil" in shown.replace("\\\\", "\\"), args
    as_json = json.loads(edge(process.data_dir, "project", "list", "--json").stdout)
    assert name in [p["name"] for p in as_json["items"]]  # --json: the value itself, JSON-escaped
    refused = edge(process.data_dir, "product", "list", "prj_aaaa\x1b[31maaaaaaaaaaaa", check=False)
    assert refused.returncode == 1 and "\x1b" not in refused.stderr
    assert (
        refused.stderr.startswith("edge: 404 project_not_found") and refused.stderr.count("\n") == 1
    )
    typed = edge(
        process.data_dir, "product", "set", pid, "x?y=1", "--name", "X", "--amount", "5",
        "--currency", "EUR", check=False,
    )  # fmt: skip
    assert typed.returncode == 1 and "400" in typed.stderr
    assert json.loads(edge(process.data_dir, "product", "list", pid, "--json").stdout) == {
        "items": []
    }  # not product x


def test_edge_account_reset_link_and_2fa_remove(process):
    password, new = "a long enough password", "another long password"
    with httpx.Client(base_url=process.url, timeout=bound(30)) as http:
        assert http.post("/api/accounts", json={"email": "ops@example.com", "password": password})
        session = http.post("/api/session", json={"email": "ops@example.com", "password": password})
        csrf = {"Cm-Csrf": session.json()["csrfToken"]}
        started = http.post("/api/account/two-factor", json={"password": password}, headers=csrf)
        secret = started.json()["secret"]
        on = http.post(
            "/api/account/two-factor/confirm", json={"code": pyotp.TOTP(secret).now()}, headers=csrf
        )
        assert on.status_code == 200

        printed = edge(process.data_dir, "account", "reset-link", "ops@example.com").stdout
        url = printed.splitlines()[0]
        assert url.startswith(f"{process.url}/dashboard/reset?token=") and "works once" in printed
        token = url.split("token=")[1]
        done = http.post(
            "/api/accounts/password-reset/complete", json={"token": token, "password": new}
        )
        assert done.status_code == 200
        assert http.get("/api/account").status_code == 401  # the session ended

        asked = http.post("/api/session", json={"email": "ops@example.com", "password": new})
        assert asked.status_code == 202  # the second factor is still on
        removed = edge(process.data_dir, "account", "2fa-remove", "ops@example.com")
        assert removed.stdout.strip() == "two-factor login is off for ops@example.com"
        plain = http.post("/api/session", json={"email": "ops@example.com", "password": new})
        assert plain.status_code == 200

    unknown = edge(process.data_dir, "account", "reset-link", "who@example.com", check=False)
    assert unknown.returncode == 1
    assert unknown.stderr == "edge: no account has the e-mail who@example.com\n"
