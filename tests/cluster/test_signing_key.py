"""One signing key for every node of a cluster (EDGE_SIGNING_KEY): real nodes on one PostgreSQL
store sign public-info alike and serve one button script, without a key file in their data
dirs; a node with another key refuses to start in one line; ``edge cluster signing-key`` shows
the cluster's key id and forgets it for a cluster that lost its key. Two nodes starting
together on an empty store with different keys: one serves, the other refuses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import trio
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from support.client import Admin, manual_shop
from support.nodes import NodeProcess
from support.postgres import require_psycopg
from support.waits import bound

require_psycopg()

from edge.config import NODE_FILE  # noqa: E402
from edge.signing import SIGNING_KEY_FILE, Signer  # noqa: E402

TOKEN = "cluster-admin-token-0123456789abcdef"
SECRET = "ab" * 32


def new_pem() -> str:
    return (
        ec.generate_private_key(ec.SECP256R1())
        .private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        .decode()
    )


def kid_of(pem: str) -> str:
    return Signer.load(Path("/nonexistent"), pem).kid


def cluster_env(pg_url: str, node_id: str, **more: str) -> dict[str, str]:
    return {
        "EDGE_STORE": pg_url,
        "EDGE_NODE_ID": node_id,
        "EDGE_SECRET_KEY": SECRET,
        "EDGE_ADMIN_TOKEN": TOKEN,
        "EDGE_PUBLIC_URL": "https://pay.example",
        "EDGE_LEASE_S": "2",
        **more,
    }


async def edge(*args: str, env: dict[str, str] | None = None) -> trio.CompletedProcess[bytes]:
    return await trio.run_process(
        [sys.executable, "-m", "edge", *args],
        capture_stdout=True,
        capture_stderr=True,
        check=False,
        env={**os.environ, **(env or {})},
    )


def refused_in_one_line(done: trio.CompletedProcess[bytes], *words: str) -> str:
    """The refusal: one ``edge:`` line (after the log's lines of what started), no traceback."""
    said = done.stderr.decode()
    assert done.returncode == 1, (done.returncode, said)
    lines = [line for line in said.splitlines() if line.startswith("edge: ")]
    assert len(lines) == 1 and "Traceback" not in said, said
    for word in words:
        assert word in lines[0], (word, said)
    return lines[0]


async def test_nodes_given_one_key_sign_alike_and_another_key_is_refused(tmp_path, pg_url):
    pem = new_pem()
    kid = kid_of(pem)
    a = NodeProcess(tmp_path / "a", cluster_env(pg_url, "node-a", EDGE_SIGNING_KEY=pem))
    b = NodeProcess(tmp_path / "b", cluster_env(pg_url, "node-b", EDGE_SIGNING_KEY=pem))
    await trio.to_thread.run_sync(a.start)
    try:
        await trio.to_thread.run_sync(b.start)
        admin = Admin(a.url, TOKEN)
        shop = await manual_shop(admin)  # node a holds its lease
        await admin.aclose()
        info = f"/api/projects/{shop.project_id}/public-info?productId=book"
        async with httpx.AsyncClient(base_url=a.url) as to_a:
            signed = await to_a.get(info)
            assert signed.status_code == 200
            a_keys = (await to_a.get("/.well-known/cm-signing-keys")).json()
            a_script = (await to_a.get("/button.js")).headers["location"]
        async with httpx.AsyncClient(base_url=b.url) as to_b:
            assert (await to_b.get("/.well-known/cm-signing-keys")).json() == a_keys
            assert (await to_b.get("/button.js")).headers["location"] == a_script
        assert [k["kid"] for k in a_keys["keys"]] == [kid]
        for data in (a.data_dir, b.data_dir):
            assert not (data / SIGNING_KEY_FILE).exists()  # the key came from the environment

        shown = await edge("cluster", "signing-key", "--store", pg_url, "--json")
        assert json.loads(shown.stdout) == {"keyId": kid, "forgotten": False}

        # a node with a key of its own (made in its data dir) refuses to join
        own = await edge(
            "serve", "--port", "0", "--data", str(tmp_path / "c"),
            env=cluster_env(pg_url, "node-c"),
        )  # fmt: skip
        own_kid = Signer.load(tmp_path / "c").kid
        line = refused_in_one_line(own, "is not the cluster's", own_kid, kid, "EDGE_SIGNING_KEY")
        assert "PRIVATE KEY" not in line

        a.terminate()  # its lease given back: node b serves the project, signing alike
        async with httpx.AsyncClient(base_url=b.url) as to_b:
            again = await to_b.get(info)
        assert again.status_code == 200
        assert (again.content, again.headers["Cm-Signature"]) == (
            signed.content,
            signed.headers["Cm-Signature"],
        )
    finally:
        for node in (a, b):
            if node.proc is not None and node.proc.poll() is None:
                node.terminate()

    # the cluster lost its key: forget it, and the next node to start makes its key the cluster's
    forgot = await edge("cluster", "signing-key", "--forget", "--store", pg_url)
    assert forgot.stdout.decode().startswith(f"forgot key id {kid}: "), forgot.stdout
    c = NodeProcess(tmp_path / "c", cluster_env(pg_url, "node-c"))
    await trio.to_thread.run_sync(c.start)
    try:
        shown = await edge("cluster", "signing-key", "--store", pg_url)
        assert shown.stdout.decode().strip() == own_kid
    finally:
        c.terminate()


@pytest.mark.parametrize("differs", ["EDGE_SECRET_KEY", "EDGE_SIGNING_KEY"])
async def test_two_nodes_starting_together_on_an_empty_store_keep_one_key(
    tmp_path, pg_url, differs
):
    same_pem = new_pem()
    envs = []
    for n in (1, 2):
        env = cluster_env(pg_url, f"node-{n}", EDGE_SIGNING_KEY=same_pem)
        env[differs] = f"{n:02x}" * 32 if differs == "EDGE_SECRET_KEY" else new_pem()
        envs.append(env)
    outcome = await trio.to_thread.run_sync(_start_together, tmp_path, envs)
    served = [o for o in outcome if o[0] == "serves"]
    refused = [o for o in outcome if o[0] != "serves"]
    assert len(served) == 1 and len(refused) == 1, outcome
    said = refused[0][1]
    lines = [line for line in said.splitlines() if line.startswith("edge: ")]
    assert refused[0][0] == "exited 1" and len(lines) == 1 and "Traceback" not in said, said
    word = "sealing key" if differs == "EDGE_SECRET_KEY" else "is not the cluster's"
    assert word in lines[0], said


def _start_together(root: Path, envs: list[dict[str, str]]) -> list[tuple[str, str]]:
    """Start a node for each env at once; each one's outcome: serving, or what it said."""
    procs = []
    for n, env in enumerate(envs):
        data = root / f"node{n}"
        data.mkdir()
        procs.append(
            (
                data,
                subprocess.Popen(
                    [sys.executable, "-m", "edge", "serve", "--port", "0", "--data", str(data)],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE,
                    env={**os.environ, **env},
                ),
            )
        )
    outcome: dict[int, tuple[str, str]] = {}
    deadline = time.monotonic() + bound(60)
    try:
        while len(outcome) < len(procs) and time.monotonic() < deadline:
            for n, (data, proc) in enumerate(procs):
                if n in outcome:
                    continue
                if proc.poll() is not None:
                    assert proc.stderr is not None
                    outcome[n] = (f"exited {proc.returncode}", proc.stderr.read().decode())
                elif (data / NODE_FILE).exists():
                    outcome[n] = ("serves", "")
            time.sleep(0.05)
    finally:
        for _, proc in procs:
            if proc.poll() is None:
                proc.terminate()
            proc.wait(timeout=bound(20))
            if proc.stderr is not None:
                proc.stderr.close()
    return [outcome.get(n, ("neither", "")) for n in range(len(procs))]
