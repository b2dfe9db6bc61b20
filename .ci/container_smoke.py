"""The image's smoke test (run by .ci/container, standard library only): it is non-root with a
numeric user, carries a health check and nothing to build with; the node answers health and
ready, takes a pay-by-mail payment through its API, keeps it across a restart and a kill -9,
stops on SIGTERM at once, and refuses an unwritable volume in one line. In cluster mode
(EDGE_STORE, against a throwaway PostgreSQL from the machine's Debian packages) it takes a
payment too, under its lease, and its `edge cluster` commands read the shared store."""

from __future__ import annotations

import glob
import json
import os
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

IMAGE = sys.argv[1] if len(sys.argv) > 1 else "localhost/edge:ci"
TOKEN = "smoke-admin-token-0123456789abcdef"
PODMAN = ["podman", "--runtime", "runc"]
# what this kind of machine lets a container set (the defaults raise limits it forbids)
RUN = ["run", "--network", "host", "--ulimit", "nofile=8192:8192", "--ulimit", "nproc=4096:4096"]


def podman(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([*PODMAN, *args], capture_output=True, text=True, timeout=120)
    if check and done.returncode != 0:
        raise SystemExit(f"podman {' '.join(args)} failed: {done.stderr.strip()}")
    return done


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def call(base: str, method: str, path: str, body: Any = None, token: bool = True) -> Any:
    request = urllib.request.Request(base + path, method=method)
    if token:
        request.add_header("Authorization", f"Bearer {TOKEN}")
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        request.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(request, data, timeout=10) as answer:
        return json.loads(answer.read() or b"null")


def wait_healthy(base: str) -> None:
    deadline = time.monotonic() + 20
    while True:
        try:
            call(base, "GET", "/healthz", token=False)
            return
        except (urllib.error.URLError, ConnectionError):
            if time.monotonic() > deadline:
                raise SystemExit("the node did not answer /healthz within 20 s") from None
            time.sleep(0.2)


def check(condition: bool, what: str) -> None:
    if not condition:
        raise SystemExit(f"container smoke test failed: {what}")
    print(f"  ok  {what}")


def image_facts() -> None:
    image = json.loads(podman("image", "inspect", IMAGE).stdout)[0]
    config = image["Config"]
    check(config.get("User") == "10001:10001", "the image runs as a numeric non-root user")
    health = image.get("Healthcheck") or config.get("Healthcheck") or {}
    check(bool(health.get("Test")), "the image carries a health check")
    tools = podman(
        "run", "--rm", "--network", "host", "--ulimit", "nofile=8192:8192",
        "--ulimit", "nproc=4096:4096", "--entrypoint", "sh", IMAGE, "-c",
        "python3 -m pip --version; command -v gcc cc pip pip3 || true",
        check=False,
    )  # fmt: skip
    check("No module named pip" in tools.stderr + tools.stdout, "no pip in the runtime image")
    check("/" not in tools.stdout, "no compiler or pip command in the runtime image")


def pay_by_mail(base: str) -> tuple[str, Any]:
    """A project with pay by mail, a checkout marked paid: its status path and answer."""
    project = call(
        base,
        "POST",
        "/api/manage/projects",
        {
            "name": "Smoke",
            "successUrl": "https://shop.example/ok",
            "cancelUrl": "https://shop.example/no",
            "allowedOrigins": ["https://shop.example"],
        },
    )["id"]
    call(
        base,
        "PUT",
        f"/api/manage/projects/{project}/products/book",
        {"name": "A book", "kind": "payment", "amount": 19.99, "currency": "EUR"},
    )
    address = {"name": "Shop Ltd", "lines": ["1 Main St"], "country": "GB"}
    call(
        base,
        "PUT",
        f"/api/manage/projects/{project}/providers/manual",
        {"enabled": True, "live": {"mailingAddress": address}},
    )
    tx = call(base, "POST", f"/api/checkout/manual/{project}", {"productId": "book"})
    check(tx["type"] == "reference" and tx["reference"].startswith("CM-"), "pay by mail")
    call(base, "POST", f"/api/projects/{project}/transactions/{tx['txId']}/mark-paid", {})
    status = f"/status/{project}/{tx['txId']}"
    paid = call(base, "GET", status, token=False)
    check(paid["status"] == "succeeded", "marked paid: succeeded")
    return status, paid


def payment_survives(volume: str) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    name = f"edge-smoke-{port}"
    podman(
        *RUN, "-d", "--name", name, "-v", f"{volume}:/var/lib/edge",
        "-e", f"EDGE_ADMIN_TOKEN={TOKEN}", "-e", f"EDGE_PUBLIC_URL={base}",
        IMAGE, "serve", "--host", "127.0.0.1", "--port", str(port), "--data", "/var/lib/edge",
    )  # fmt: skip
    try:
        wait_healthy(base)
        check(call(base, "GET", "/readyz", token=False)["status"] == "ready", "ready")
        health = podman("healthcheck", "run", name, check=False)
        check(health.returncode == 0, "the image's own health check passes")
        who = podman("exec", name, "id", "-u").stdout.strip()
        check(who == "10001", "the node runs as uid 10001")

        status, paid = pay_by_mail(base)

        podman("restart", "-t", "10", name)
        wait_healthy(base)
        check(call(base, "GET", status, token=False) == paid, "kept across a restart")

        podman("kill", "--signal", "KILL", name)
        podman("wait", name, check=False)
        podman("start", name)
        wait_healthy(base)
        check(call(base, "GET", status, token=False) == paid, "kept across kill -9")

        started = time.monotonic()
        podman("stop", "-t", "10", name)
        took = time.monotonic() - started
        logs = podman("logs", name).stdout + podman("logs", name).stderr
        check(took < 3 and "store closed" in logs, f"SIGTERM stops it in {took:.2f} s")
    finally:
        podman("rm", "-f", name, check=False)


def unwritable_volume_is_one_line() -> None:
    with tempfile.TemporaryDirectory() as where:
        os.chmod(where, 0o755)  # root's, as a bind mount made without thought is
        done = podman(
            *RUN, "--rm", "-v", f"{where}:/var/lib/edge", IMAGE,
            "serve", "--port", str(free_port()), "--data", "/var/lib/edge",
            check=False,
        )  # fmt: skip
    said = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    said = [line for line in said if "level=" not in line]  # podman's own notes
    check(done.returncode != 0, "an unwritable volume stops the node")
    check(len(said) == 1 and "Traceback" not in said[0], f"in one line: {said[:3]}")


@contextmanager
def throwaway_postgres() -> Iterator[str | None]:
    """A PostgreSQL server from the machine's Debian packages on a loopback port (the container
    shares the host's network), trusting every local connection; its URL, or None without
    the packages."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    if not found:
        if os.environ.get("EDGE_REQUIRE_POSTGRES") == "1":
            raise SystemExit(
                "container smoke test: no PostgreSQL binaries (apt-get install postgresql)"
            )
        yield None
        return
    binaries = os.path.dirname(found[-1])
    root = tempfile.mkdtemp(prefix="edge-smoke-pg-")
    as_user: list[str] = []
    if os.geteuid() == 0:  # PostgreSQL refuses root: Debian's postgres user runs it
        user = pwd.getpwnam("postgres")
        os.chown(root, user.pw_uid, user.pw_gid)
        as_user = ["runuser", "-u", "postgres", "--"]
    data, port = os.path.join(root, "data"), free_port()

    def run(*command: str) -> None:
        subprocess.run([*as_user, *command], check=True, capture_output=True, cwd=root)

    run(f"{binaries}/initdb", "-D", data, "-U", "postgres", "-A", "trust", "--no-sync")
    options = f"-k {root} -c listen_addresses=127.0.0.1 -p {port} -c fsync=off"
    run(f"{binaries}/pg_ctl", "-D", data, "-l", f"{root}/log", "-o", options, "-w", "start")
    try:
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    finally:
        run(f"{binaries}/pg_ctl", "-D", data, "-m", "fast", "-w", "stop")
        shutil.rmtree(root, ignore_errors=True)


def cluster_mode() -> None:
    with throwaway_postgres() as store:
        if store is None:
            print("  skip cluster mode: no PostgreSQL binaries on this machine")
            return
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        name = f"edge-smoke-cluster-{port}"
        podman(
            *RUN, "-d", "--name", name,
            "-e", f"EDGE_STORE={store}", "-e", "EDGE_NODE_ID=smoke-1",
            "-e", f"EDGE_ADMIN_TOKEN={TOKEN}", "-e", f"EDGE_SECRET_KEY={'5a' * 32}",
            IMAGE, "serve", "--host", "127.0.0.1", "--port", str(port), "--data", "/var/lib/edge",
        )  # fmt: skip
        try:
            wait_healthy(base)
            check(call(base, "GET", "/readyz", token=False)["status"] == "ready", "cluster: ready")
            status, _ = pay_by_mail(base)
            project = status.split("/")[2]
            nodes = podman("exec", name, "edge", "cluster", "nodes", "--store", store, "--json")
            listed = json.loads(nodes.stdout)["items"]
            check(
                [(n["node_id"], n["alive"]) for n in listed] == [("smoke-1", True)],
                "cluster: nodes",
            )
            leases = podman("exec", name, "edge", "cluster", "leases", "--store", store, "--json")
            held = {
                lease["project_id"]: lease["owner"] for lease in json.loads(leases.stdout)["items"]
            }
            check(held.get(project) == "smoke-1", "cluster: the project is served under its lease")
            podman("stop", "-t", "10", name)
            said = podman("logs", name)
            logs = said.stdout + said.stderr
            check("store closed" in logs and "Traceback" not in logs, "cluster: a clean stop")
        finally:
            podman("rm", "-f", "-v", name, check=False)


def main() -> None:
    volume = f"edge-smoke-{os.getpid()}"
    started = time.monotonic()
    try:
        image_facts()
        payment_survives(volume)
        unwritable_volume_is_one_line()
        cluster_mode()
    finally:
        podman("volume", "rm", "-f", volume, check=False)
    print(f"container smoke test passed in {time.monotonic() - started:.1f} s")


if __name__ == "__main__":
    main()
