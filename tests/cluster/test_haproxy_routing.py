"""HAProxy routes every request for a project to one node (issue 28), tested with Debian's
haproxy started on loopback in front of three stand-in nodes that answer their own name.

Skipped with a reason when haproxy is not installed; EDGE_REQUIRE_CLUSTER=1 (CI) fails instead.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio
from support.asgi import serve_asgi
from support.haproxy import HAPROXY, require_haproxy, running_haproxy
from support.waits import bound, until

from edge.cluster.haproxy import PROJECT_PATHS, ROUTE_HEADER, Node, RuntimeApi, render
from edge.domain import ids

require_haproxy()

NAMES = ("n1", "n2", "n3")


def shapes(project_id: str) -> list[tuple[str, str]]:
    """A request of every path shape that names ``project_id``."""
    tx, sub = ids.new_tx_id(), "sub_x"
    return [
        ("GET", f"/status/{project_id}/{tx}"),
        ("POST", f"/webhook/stripe/{project_id}"),
        ("POST", f"/api/checkout/paypal/{project_id}"),
        ("GET", f"/api/projects/{project_id}/public-info"),
        ("GET", f"/api/projects/{project_id}/transactions/{tx}"),
        ("POST", f"/api/subscriptions/{project_id}/{sub}/portal-url"),
        ("PUT", f"/api/manage/projects/{project_id}/products/book"),
        ("GET", f"/return/paypal/{project_id}/{tx}"),
        ("GET", f"/dashboard/p/{project_id}/transactions"),
        ("GET", f"/pay/{project_id}/book"),
    ]


@dataclass
class StandIn:
    """A node stand-in: answers its name and what the proxy told it."""

    name: str
    seen: list[tuple[str, str | None]] = field(default_factory=list)
    forwarded: list[str | None] = field(default_factory=list)
    up: bool = True

    async def __call__(self, scope: dict[str, Any], body: bytes) -> tuple[int, bytes]:
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        if not self.up:
            return 503, b"down"
        if scope["path"] != "/readyz":
            self.seen.append((scope["path"], headers.get(ROUTE_HEADER.lower())))
            self.forwarded.append(headers.get("x-forwarded-for"))
        return 200, self.name.encode()


@dataclass
class Proxy:
    url: str
    api: RuntimeApi
    nodes: dict[str, StandIn]
    config: str


@pytest.fixture
async def proxy(tmp_path: Path) -> AsyncIterator[Proxy]:
    nodes = {name: StandIn(name) for name in NAMES}
    async with trio.open_nursery() as nursery:
        urls = {name: await nursery.start(serve_asgi, node) for name, node in nodes.items()}
        listed = [Node(name, url.removeprefix("http://")) for name, url in urls.items()]
        async with running_haproxy(tmp_path, listed) as running:
            yield Proxy(running.url, running.api, nodes, running.config)
        nursery.cancel_scope.cancel()


async def _node_of(http: httpx.AsyncClient, proxy: Proxy, method: str, path: str) -> str:
    answer = await http.request(method, proxy.url + path)
    assert answer.status_code == 200, (path, answer.status_code, answer.text)
    return answer.text


async def test_every_path_shape_of_a_project_reaches_the_same_node_and_projects_spread(
    proxy: Proxy,
) -> None:
    projects = [ids.new_project_id() for _ in range(45)]
    home: dict[str, str] = {}
    async with httpx.AsyncClient() as http:
        for project_id in projects:
            reached = {await _node_of(http, proxy, m, p) for m, p in shapes(project_id)}
            assert len(reached) == 1, (project_id, reached)
            home[project_id] = reached.pop()
    # every shape of the configuration's table was exercised
    exercised = {
        pre for pre, _ in PROJECT_PATHS for _, p in shapes(projects[0]) if p.startswith(pre)
    }
    assert exercised == {pre for pre, _ in PROJECT_PATHS}
    spread = Counter(home.values())
    assert set(spread) == set(NAMES), spread  # 45 projects reach all three nodes
    # the node is told which project the proxy routed by (none for a path naming none)
    for node in proxy.nodes.values():
        for path, project in node.seen:
            assert (project is not None and f"/{project}" in path) or (
                project is None and "/prj_" not in path
            ), (path, project)


async def test_a_client_cannot_choose_the_node_and_paths_without_a_project_go_anywhere(
    proxy: Proxy,
) -> None:
    project_id = ids.new_project_id()
    async with httpx.AsyncClient() as http:
        home = await _node_of(http, proxy, "GET", f"/api/projects/{project_id}/public-info")
        for forged in (ids.new_project_id() for _ in range(12)):
            answer = await http.get(
                f"{proxy.url}/api/projects/{project_id}/public-info",
                headers={ROUTE_HEADER: forged},
            )
            assert answer.text == home
        # a percent-encoded id is the same project to the node (it decodes the path): the same
        # node, never round robin
        encoded = f"/api/projects/{project_id.replace('_', '%5F')}/public-info"
        assert {await _node_of(http, proxy, "GET", encoded) for _ in range(6)} == {home}
        # the client's address reaches the node as the proxy saw it, whatever the client said
        await http.get(f"{proxy.url}/docs", headers={"X-Forwarded-For": "203.0.113.9"})
        anywhere = Counter([await _node_of(http, proxy, "GET", "/docs") for _ in range(9)])
        # not a project id where one belongs: no project, so no pinning to one node
        odd = Counter(
            [await _node_of(http, proxy, "GET", "/api/projects/prj_NOTONE/x") for _ in range(9)]
        )
    assert set(anywhere) == set(NAMES), anywhere
    assert set(odd) == set(NAMES), odd
    seen = [project for node in proxy.nodes.values() for path, project in node.seen]
    assert ids.is_project_id(project_id) and all(p in (None, project_id) for p in seen)
    forwarded = {f for node in proxy.nodes.values() for f in node.forwarded}
    assert forwarded == {"127.0.0.1"}, forwarded


async def test_a_pin_moves_one_project_live_and_unpinning_returns_it(proxy: Proxy) -> None:
    projects = [ids.new_project_id() for _ in range(12)]
    async with httpx.AsyncClient() as http:
        before = {p: await _node_of(http, proxy, "GET", f"/status/{p}/x") for p in projects}
        moved = projects[0]
        target = next(n for n in NAMES if n != before[moved])
        proxy.api.pin(moved, target)
        assert proxy.api.pins() == {moved: target}
        for method, path in shapes(moved):
            assert await _node_of(http, proxy, method, path) == target
        for other in projects[1:]:
            assert await _node_of(http, proxy, "GET", f"/status/{other}/x") == before[other]
        again = next(n for n in NAMES if n not in (before[moved], target))
        proxy.api.pin(moved, again)  # a pinned project moves again
        assert await _node_of(http, proxy, "GET", f"/status/{moved}/x") == again
        # written to the map file too: a reload or a restart keeps it
        assert proxy.api.pins_map.read_text() == f"{moved} pin_{again}\n"
        proxy.api.unpin(moved)
        assert proxy.api.pins() == {}
        assert proxy.api.pins_map.read_text() == ""
        assert await _node_of(http, proxy, "GET", f"/status/{moved}/x") == before[moved]
    with pytest.raises(ValueError):
        proxy.api.pin("prj_x; shutdown", target)


async def test_a_node_that_fails_its_checks_moves_only_its_own_projects(proxy: Proxy) -> None:
    projects = [ids.new_project_id() for _ in range(60)]
    async with httpx.AsyncClient() as http:
        before = {p: await _node_of(http, proxy, "GET", f"/status/{p}/x") for p in projects}
        down = Counter(before.values()).most_common(1)[0][0]
        proxy.nodes[down].up = False
        await until(  # HAProxy's own checks (every 2 s, down after 3) see it go
            lambda: "DOWN" in _server_state(proxy, down),
            what=f"HAProxy marked {down} down",
            timeout_s=20,
            every=0.2,
        )
        after = {p: await _node_of(http, proxy, "GET", f"/status/{p}/x") for p in projects}
    for project_id in projects:
        if before[project_id] == down:
            assert after[project_id] != down
        else:  # consistent hashing: the others stay where they were
            assert after[project_id] == before[project_id]


def _server_state(proxy: Proxy, name: str) -> str:
    answer = proxy.api.command("show servers state edge_nodes")
    return " ".join(
        "DOWN" if line.split()[5] == "0" else "UP"
        for line in answer.splitlines()
        if len(line.split()) > 5 and line.split()[3] == name
    )


def test_the_shipped_configuration_is_the_rendered_one_and_haproxy_takes_it(
    tmp_path: Path,
) -> None:
    shipped = Path(__file__).resolve().parents[2] / "deploy" / "haproxy.cfg"
    assert shipped.read_text() == render(
        [
            Node("node1", "10.0.0.1:8080"),
            Node("node2", "10.0.0.2:8080"),
            Node("node3", "10.0.0.3:8080"),
        ],
        bind="*:80",
        pins_map=Path("/etc/haproxy/edge-pins.map"),
        admin_socket=Path("/run/haproxy/admin.sock"),
    )
    checked = tmp_path / "haproxy.cfg"
    checked.write_text(
        shipped.read_text()
        .replace("/etc/haproxy/edge-pins.map", str(tmp_path / "pins.map"))
        .replace("/run/haproxy/admin.sock", str(tmp_path / "admin.sock"))
    )
    (tmp_path / "pins.map").write_text("")
    result = subprocess.run(
        [HAPROXY, "-c", "-f", str(checked)], capture_output=True, text=True, timeout=bound(30)
    )
    assert result.returncode == 0, result.stderr
    assert "WARNING" not in result.stderr and "ALERT" not in result.stderr, result.stderr


def test_node_names_and_addresses_are_checked() -> None:
    for bad in ("", "N1", "1n", "n 1", "n1;x"):
        with pytest.raises(ValueError):
            Node(bad, "127.0.0.1:1")
    for bad in ("127.0.0.1", ":80", "h:0", "h:65536", "h:x"):
        with pytest.raises(ValueError):
            Node("n1", bad)


async def test_edge_cluster_pins_and_unpins_through_haproxy(proxy: Proxy) -> None:
    project_id = ids.new_project_id()
    sockets = [
        "--haproxy-socket",
        str(proxy.api.admin_socket),
        "--pins-map",
        str(proxy.api.pins_map),
    ]

    async def edge(*args: str) -> subprocess.CompletedProcess[bytes]:
        return await trio.run_process(
            [sys.executable, "-m", "edge", "cluster", *args, *sockets],
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )

    async with httpx.AsyncClient() as http:
        home = await _node_of(http, proxy, "GET", f"/status/{project_id}/x")
        target = next(n for n in NAMES if n != home)
        pinned = await edge("pin", project_id, target)
        assert pinned.returncode == 0, pinned.stderr
        assert pinned.stdout.decode().strip() == f"{project_id} -> {target}"
        assert await _node_of(http, proxy, "GET", f"/status/{project_id}/x") == target
        listed = await edge("pins", "--json")
        assert json.loads(listed.stdout) == {"pins": {project_id: target}}
        refused = await edge("pin", "prj_notaproject", target)
        assert refused.returncode == 1 and refused.stderr.decode().count("\n") == 1
        assert (await edge("unpin", project_id)).returncode == 0
        assert await _node_of(http, proxy, "GET", f"/status/{project_id}/x") == home


async def test_a_drained_node_gets_no_new_request_and_comes_back_when_ready(proxy: Proxy) -> None:
    projects = [ids.new_project_id() for _ in range(30)]
    async with httpx.AsyncClient() as http:
        before = {p: await _node_of(http, proxy, "GET", f"/status/{p}/x") for p in projects}
        drained = Counter(before.values()).most_common(1)[0][0]
        proxy.api.set_state(drained, "drain")
        during = {p: await _node_of(http, proxy, "GET", f"/status/{p}/x") for p in projects}
        assert drained not in during.values()
        assert all(during[p] == before[p] for p in projects if before[p] != drained)
        proxy.api.set_state(drained, "ready")
        after = {p: await _node_of(http, proxy, "GET", f"/status/{p}/x") for p in projects}
    assert after == before
    with pytest.raises(ValueError):
        proxy.api.set_state("n1", "maint")
