"""Debian's HAProxy started on loopback with ``edge cluster``'s configuration (issue 28), in
front of nodes the test runs; skipped with a reason when haproxy is not installed
(EDGE_REQUIRE_CLUSTER=1, CI, fails instead)."""

from __future__ import annotations

import os
import shutil
import socket
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import trio

from edge.cluster.haproxy import Node, RuntimeApi, render
from support.waits import bound

HAPROXY = shutil.which("haproxy") or "/usr/sbin/haproxy"


def require_haproxy() -> None:
    if Path(HAPROXY).exists():
        return
    if os.environ.get("EDGE_REQUIRE_CLUSTER") == "1":
        raise RuntimeError("EDGE_REQUIRE_CLUSTER=1 but haproxy is not installed")
    pytest.skip(
        "haproxy is not installed (apt-get install haproxy; CI installs it)",
        allow_module_level=True,
    )


@dataclass
class Proxy:
    url: str
    api: RuntimeApi
    config: str


@asynccontextmanager
async def running_haproxy(where: Path, nodes: Sequence[Node]) -> AsyncIterator[Proxy]:
    """HAProxy in front of ``nodes``, its files under ``where``; stopped on leaving."""
    port = _free_port()
    pins, admin = where / "pins.map", where / "admin.sock"
    pins.write_text("")
    config = render(nodes, bind=f"127.0.0.1:{port}", pins_map=pins, admin_socket=admin)
    (where / "haproxy.cfg").write_text(config)
    log = (where / "haproxy.log").open("wb")
    process = await trio.lowlevel.open_process(
        [HAPROXY, "-db", "-f", str(where / "haproxy.cfg")], stdout=log, stderr=log
    )
    try:
        url = f"http://127.0.0.1:{port}"
        await _until_serving(url, process, where / "haproxy.log")
        yield Proxy(url, RuntimeApi(admin, pins), config)
    finally:
        process.terminate()
        with trio.move_on_after(bound(5)):
            await process.wait()
        log.close()


async def _until_serving(url: str, process: trio.Process, log: Path) -> None:
    async with httpx.AsyncClient() as http:
        with trio.move_on_after(bound(15)):
            while process.returncode is None:
                try:
                    if (await http.get(f"{url}/docs")).status_code == 200:
                        return
                except httpx.TransportError:
                    pass
                await trio.sleep(0.05)  # nothing announces that haproxy listens: look again
    raise AssertionError(f"haproxy did not serve: {log.read_text()}")  # noqa: ASYNC240


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
