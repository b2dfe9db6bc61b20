"""A backup holds what opens it (CONTRACT 10): taken while the node runs, restored into a new
data dir, it serves every stored transaction and pays with the restored Stripe credentials; a
node started with another sealing key refuses in one line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import trio
from support.client import bearer
from support.nodes import NodeProcess
from support.waits import bound

from edge.signing import SIGNING_KEY_FILE, Signer
from edge.store.lmdb.store import STORE_DIR, open_store

SECRET_KEY = "sk_test_shop0123456789abcdefghij"


def edge(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "edge", *args], capture_output=True, text=True, timeout=bound(60)
    )


def _shop(node: NodeProcess, sim: Any) -> tuple[str, str]:
    """A project with Stripe on the simulator (its secrets sealed in the store) and a key."""
    with httpx.Client(base_url=node.url, headers=bearer(node.admin_token)) as admin:
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
        admin.put(f"/api/manage/projects/{pid}/products/book", json=product).raise_for_status()
        credentials = {
            "secretKey": SECRET_KEY,
            "publishableKey": "pk_test_shop0123456789abcdefghij",
            "webhookSecret": sim.register_endpoint(SECRET_KEY, f"{node.url}/webhook/stripe/{pid}"),
            "apiBase": sim.url,
        }
        admin.put(
            f"/api/manage/projects/{pid}/providers/stripe",
            json={"enabled": True, "test": credentials},
        ).raise_for_status()
        key = admin.post(
            f"/api/manage/projects/{pid}/keys", json={"mode": "test", "name": "s"}
        ).json()["key"]
    return pid, key


def _serve_with_another_key(data: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "edge", "serve", "--port", "0", "--data", str(data)],
        capture_output=True,
        text=True,
        timeout=bound(60),
        env={**os.environ, "EDGE_SECRET_KEY": "11" * 32},
    )


async def test_a_backup_restores_into_a_node_that_serves_and_pays(tmp_path, sim):
    node = NodeProcess(tmp_path / "data").start()
    try:
        pid, key = await trio.to_thread.run_sync(_shop, node, sim)
        async with httpx.AsyncClient(base_url=node.url, headers=bearer(key)) as http:
            first = await http.post(f"/api/checkout/stripe/{pid}", json={"productId": "book"})
        backed_up = await trio.to_thread.run_sync(
            edge, "backup", str(tmp_path / "copy"), "--data", str(node.data_dir)
        )
        assert backed_up.returncode == 0, backed_up.stderr
    finally:
        node.terminate()
    restored = await trio.to_thread.run_sync(
        edge, "restore", str(tmp_path / "copy"), "--data", str(tmp_path / "again")
    )
    assert restored.returncode == 0, restored.stderr
    again = NodeProcess(tmp_path / "again").start()
    try:
        async with httpx.AsyncClient(base_url=again.url, headers=bearer(key)) as http:
            status = await http.get(f"/status/{pid}/{first.json()['txId']}")
            assert status.status_code == 200 and status.json()["status"] == "pending"
            paid = await http.post(f"/api/checkout/stripe/{pid}", json={"productId": "book"})
            assert paid.status_code == 201, paid.text  # the restored secret key opened and worked
    finally:
        again.terminate()
    assert {p.name for p in (tmp_path / "copy").iterdir()} >= {"store", "secret.key"}
    assert all(p.stat().st_mode & 0o077 == 0 for p in (tmp_path / "copy").iterdir())

    wrong = await trio.to_thread.run_sync(_serve_with_another_key, tmp_path / "again")
    assert wrong.returncode == 1
    last = wrong.stderr.strip().splitlines()[-1]
    assert last.startswith("edge: the sealing key") and "Traceback" not in wrong.stderr


async def test_a_backup_taken_while_webhooks_flow_restores_everything_it_holds(tmp_path, sim):
    node = NodeProcess(tmp_path / "data").start()
    paid: list[tuple[str, float]] = []  # (tx id, when its payment was acknowledged)
    started = float("inf")  # when the backup started
    flowing, flowed_on, done = trio.Event(), trio.Event(), trio.Event()
    try:
        pid, key = await trio.to_thread.run_sync(_shop, node, sim)

        async def buyers() -> None:
            async with httpx.AsyncClient(base_url=node.url, headers=bearer(key)) as http:
                while not done.is_set():
                    answer = await http.post(
                        f"/api/checkout/stripe/{pid}", json={"productId": "book"}
                    )
                    checkout = answer.json()
                    # the simulator pays and delivers Stripe's webhooks before it answers
                    await sim.complete(checkout["url"].rsplit("/", 1)[1])
                    paid.append((checkout["txId"], trio.current_time()))
                    if len(paid) >= 5:
                        flowing.set()
                    if len([t for _, t in paid if t > started]) >= 3:
                        flowed_on.set()  # the flow went on after the backup started

        async with trio.open_nursery() as nursery:
            nursery.start_soon(buyers)
            await flowing.wait()
            started = trio.current_time()
            backed_up = await trio.to_thread.run_sync(
                edge, "backup", str(tmp_path / "copy"), "--data", str(node.data_dir)
            )
            assert backed_up.returncode == 0, backed_up.stderr
            await flowed_on.wait()
            done.set()
    finally:
        node.terminate()
    restored = await trio.to_thread.run_sync(
        edge, "restore", str(tmp_path / "copy"), "--data", str(tmp_path / "again")
    )
    assert restored.returncode == 0, restored.stderr
    before = {tx for tx, at in paid if at < started}
    again = NodeProcess(tmp_path / "again").start()
    try:
        async with httpx.AsyncClient(base_url=again.url, headers=bearer(key)) as http:
            listed = (
                await http.get(f"/api/projects/{pid}/transactions", params={"limit": 100})
            ).json()["items"]
            held = {tx["id"]: tx["status"] for tx in listed}
            assert before <= set(held), "a payment acknowledged before the backup is missing"
            assert all(held[tx] == "succeeded" for tx in before)
            for tx_id, status in held.items():  # everything it holds is whole and served
                served = await http.get(f"/status/{pid}/{tx_id}")
                assert served.status_code == 200 and served.json()["status"] == status
            fresh = await http.post(f"/api/checkout/stripe/{pid}", json={"productId": "book"})
            assert fresh.status_code == 201, fresh.text
    finally:
        again.terminate()


def test_a_backup_holds_the_signing_key_in_use_also_one_from_the_environment(tmp_path):
    data = tmp_path / "data"
    with open_store(data / STORE_DIR, 2**26):
        pass
    given = Signer.load(tmp_path)  # a key that is not the data dir's
    done = subprocess.run(
        [sys.executable, "-m", "edge", "backup", str(tmp_path / "copy"), "--data", str(data)],
        capture_output=True,
        text=True,
        timeout=bound(60),
        env={**os.environ, "EDGE_SIGNING_KEY": given.pem()},
    )
    assert done.returncode == 0, done.stderr
    assert Signer.load(tmp_path / "copy").kid == given.kid
    assert not (data / SIGNING_KEY_FILE).exists()


def test_a_refused_restore_writes_nothing(tmp_path):
    data = tmp_path / "data"
    with open_store(data / STORE_DIR, 2**26):
        pass
    Signer.load(data)
    copied = edge("backup", str(tmp_path / "copy"), "--data", str(data))
    assert copied.returncode == 0, copied.stderr
    busy = tmp_path / "busy"
    busy.mkdir(mode=0o755)
    (busy / "notes.txt").write_text("mine")
    refused = edge("restore", str(tmp_path / "copy"), "--data", str(busy))
    assert refused.returncode == 1 and "is not empty" in refused.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["busy", "copy", "data"]  # no leftovers
    assert oct(busy.stat().st_mode & 0o777) == "0o755"  # not even its mode changed
    assert [p.name for p in busy.iterdir()] == ["notes.txt"]
    lost = edge("restore", str(tmp_path / "nothing"), "--data", str(tmp_path / "new"))
    assert lost.returncode == 1 and not (tmp_path / "new").exists()
    empty = tmp_path / "empty"
    empty.mkdir()
    made = edge("restore", str(tmp_path / "copy"), "--data", str(empty))
    assert made.returncode == 0, made.stderr
    assert (empty / STORE_DIR / "data.mdb").exists()
    assert oct(empty.stat().st_mode & 0o777) == "0o700"
