"""Liveness and readiness (CONTRACT 4.9), and the command line's first words (CONTRACT 10)."""

from __future__ import annotations

import logging
import socket
import subprocess
import sys
from functools import partial

import httpx
import trio
from support.nodes import node_settings
from support.stripe_events import signed, stripe_credentials
from support.waits import bound

from edge.actors.readiness import PROBE_KEY
from edge.config import DEFAULT_RATE_LIMITS
from edge.domain.rate import Limit
from edge.http.health import PROBE_FRESH_S
from edge.node import run_node


async def test_healthz_answers_while_the_process_runs(http):
    answer = await http.get("/healthz")
    assert (answer.status_code, answer.json()) == (200, {"status": "ok"})
    assert answer.headers["cache-control"] == "no-store" and answer.headers["cm-request-id"]


async def test_readyz_proves_the_writer_commits(node, http):
    answer = await http.get("/readyz")
    assert (answer.status_code, answer.json()) == (200, {"status": "ready"})
    assert await node.ctx.store.get_raw(PROBE_KEY, db="meta") is not None  # the probe is durable
    room = await node.ctx.store.scan(b"ready-room", db="meta")
    assert room == []  # the room it claimed, given back


async def test_readyz_shares_one_probe_among_callers(node, http):
    commits = node.ctx.writer.stats.commits
    async with trio.open_nursery() as nursery:
        for _ in range(20):
            nursery.start_soon(http.get, "/readyz")
    assert node.ctx.writer.stats.commits - commits <= 2


async def test_a_node_whose_writer_stopped_is_not_ready(node, http):
    await trio.sleep(PROBE_FRESH_S)  # the subject: a fresh earlier result would stand
    node.ctx.writer.close()
    answer = await http.get("/readyz")
    assert answer.status_code == 503
    assert answer.json()["error"]["code"] == "unavailable"
    assert (await http.get("/healthz")).status_code == 200


async def test_other_methods_are_refused(http):
    answer = await http.post("/readyz")
    assert answer.status_code == 405 and answer.json()["error"]["code"] == "method_not_allowed"


async def test_a_refused_delivery_is_logged_with_its_reason(admin, http, caplog):
    project_id = await admin.project()
    await admin.provider(project_id, "stripe", {"enabled": True, "test": stripe_credentials()})
    body = b'{"id": "evt_1"}'
    with caplog.at_level(logging.WARNING, logger="edge.actors"):
        answer = await http.post(
            f"/webhook/stripe/{project_id}",
            content=body,
            headers=signed(body, "whsec_not_the_projects_secret_0123456789"),
        )
    assert answer.status_code == 401
    assert any(
        "refused a stripe webhook" in r.getMessage() and "no_matching_signature" in r.getMessage()
        for r in caplog.records
    )


def test_version():
    out = subprocess.run(
        [sys.executable, "-m", "edge", "--version"], capture_output=True, text=True, check=True
    )
    assert out.stdout.startswith("edge ") and len(out.stdout.split()) == 2


def test_a_port_in_use_is_one_line_naming_it(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        out = subprocess.run(
            [sys.executable, "-m", "edge", "serve", "--port", str(port), "--data", str(tmp_path)],
            capture_output=True,
            text=True,
            timeout=bound(60),
        )
    assert out.returncode == 1
    last = out.stderr.strip().splitlines()[-1]
    assert last == (
        f"edge: cannot listen on 127.0.0.1:{port}: Address already in use; "
        "stop what uses it, or give another --host or --port"
    )
    assert "Traceback" not in out.stderr


async def test_a_full_store_answers_503_and_is_not_ready(tmp_path):
    """A store whose map has no room left: writes are ``503 unavailable`` (retryable, never a
    500), and /readyz says the node is not ready, although a small write may still land in the
    pages LMDB frees at each commit."""
    limits = {**DEFAULT_RATE_LIMITS, "manage": Limit(100_000, 60.0)}
    settings = node_settings(tmp_path / "data", map_size=2**21, rate_limits=limits)
    origins = [f"https://shop-{n:02d}-{'o' * 60}.example" for n in range(20)]
    long_url = "https://shop-00-" + "o" * 60 + ".example/thanks?" + "q" * 1800
    project = {
        "name": "Full",
        "successUrl": long_url,
        "cancelUrl": long_url,
        "allowedOrigins": origins,
    }
    async with trio.open_nursery() as nursery:
        running = await nursery.start(partial(run_node, settings))
        headers = {"Authorization": f"Bearer {settings.admin_token}"}
        async with httpx.AsyncClient(base_url=running.url, headers=headers) as http:
            assert (await http.get("/readyz")).status_code == 200
            for _ in range(2000):
                made = await http.post("/api/manage/projects", json=project)
                if made.status_code != 201:
                    break
            assert made.status_code == 503, made.text
            assert made.json()["error"]["code"] == "unavailable"
            assert made.json()["error"]["retryable"] is True
            # the subject: the probe's freshness window, in which the answer from before the
            # store filled would stand
            await trio.sleep(PROBE_FRESH_S)
            ready = await http.get("/readyz")
            assert ready.status_code == 503, ready.text
            assert ready.json()["error"]["code"] == "unavailable"
            assert (await http.get("/healthz")).status_code == 200
        running.stop.set()
