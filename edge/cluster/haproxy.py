"""HAProxy in front of a cluster of nodes: the configuration that routes every request for a
project to the node serving it, and the runtime API that pins a project to a named node.

Routing (issue 28): a project is served by one node at a time, so every path that names a
project goes to the same node: the project id is read from its place in each path shape
(``PROJECT_PATHS``), then hashed consistently over the nodes (``hash-type consistent``: a node
that leaves moves only its own projects; the others stay where they are). A map file pins
projects to a node by name, for moving one by hand (``edge cluster move``); HAProxy's runtime
API changes the map without a reload. Requests that name no project (accounts, sessions, the
API reference, static files) may go to any node: their state lives in the shared store.

HAProxy 2.6 (Debian 12's) reads the result: only directives it has are used, and ``haproxy -c``
checks the file in the tests.
"""

from __future__ import annotations

import re
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

# Each path shape that names a project: its prefix and the field (split on "/", the empty
# string before the first "/" being field 1) that holds the project id (CONTRACT 4).
PROJECT_PATHS: tuple[tuple[str, int], ...] = (
    ("/status/", 3),  # /status/{projectId}/{txId}
    ("/webhook/", 4),  # /webhook/{provider}/{projectId}
    ("/api/checkout/", 5),  # /api/checkout/{provider}/{projectId}
    ("/api/projects/", 4),  # /api/projects/{projectId}/...
    ("/api/subscriptions/", 4),  # /api/subscriptions/{projectId}/{subscriptionId}/portal-url
    ("/api/manage/projects/", 5),  # /api/manage/projects/{projectId}/...
    ("/return/", 4),  # /return/{provider}/{projectId}/{txId}[/cancel]
    ("/dashboard/p/", 4),  # /dashboard/p/{projectId}/...
    ("/pay/", 3),  # /pay/{projectId}/{productId}, and its done/canceled pages
)

# the node's own project id rule (edge.domain.ids): nothing else is taken for one
PROJECT_ID = r"^prj_[0-9a-hjkmnp-tv-z]{16}$"
ROUTE_HEADER = "X-Edge-Project"
NODE_NAME = re.compile(r"[a-z][a-z0-9_-]{0,31}")


@dataclass(frozen=True)
class Node:
    name: str  # HAProxy's server name, and the pin backend's: pin_<name>
    address: str  # host:port

    def __post_init__(self) -> None:
        if not NODE_NAME.fullmatch(self.name):
            raise ValueError(f"a node name is a-z, 0-9, _ and -, from a letter: {self.name!r}")
        host, sep, port = self.address.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(f"a node address is host:port: {self.address!r}")


def pin_backend(node: str) -> str:
    return f"pin_{node}"


def render(
    nodes: Sequence[Node],
    *,
    bind: str,
    pins_map: Path,
    admin_socket: Path,
    check_path: str = "/readyz",
) -> str:
    """The HAProxy configuration for ``nodes``, listening on ``bind`` (``host:port``)."""
    if not nodes:
        raise ValueError("a cluster has at least one node")
    if len({n.name for n in nodes}) != len(nodes):
        raise ValueError("node names are unique")
    take = "\n".join(
        f"    http-request set-var(txn.project) var(txn.path),field({field},/) "
        f"if !{{ var(txn.project) -m found }} {{ var(txn.path) -m beg {prefix} }}"
        for prefix, field in PROJECT_PATHS
    )
    servers = "\n".join(f"    server {n.name} {n.address} check" for n in nodes)
    pins = "\n\n".join(
        f"backend {pin_backend(n.name)}\n"
        f"    option httpchk GET {check_path}\n"
        f"    server {n.name} {n.address} check"
        for n in nodes
    )
    found = "{ var(txn.project) -m found }"
    not_an_id = f"!{{ var(txn.project) -m reg {PROJECT_ID} }}"
    pinned = f"var(txn.project),map({pins_map})"
    return f"""# edge cluster: HAProxy in front of {len(nodes)} nodes (edge cluster haproxy-config)
global
    stats socket {admin_socket} mode 600 level admin
    # each connection takes two descriptors: raise it with the process's limit (ulimit -n)
    maxconn 4000
    log stdout format raw local0

defaults
    mode http
    log global
    option httplog
    timeout connect 2s
    timeout client 65s
    # a status or feed long poll waits up to 30 s (CONTRACT 8)
    timeout server 65s
    timeout http-request 10s
    retries 2
    option redispatch

frontend edge
    bind {bind}
    # a client cannot choose the node: the header is the proxy's own
    http-request del-header {ROUTE_HEADER}
    # the client's own address, replacing any it sent (list HAProxy in EDGE_TRUSTED_PROXIES:
    # the per-address rate limits are the client's, not the proxy's)
    http-request set-header X-Forwarded-For %[src]
    # the path as the node reads it (percent-decoded), so that an encoded id routes the same
    http-request set-var(txn.path) path,url_dec
    # the project a path names, from its place in each path shape
{take}
    http-request unset-var(txn.project) if {found} {not_an_id}
    http-request set-header {ROUTE_HEADER} %[var(txn.project)] if {found}
    # a project pinned by hand goes to its node; the others by consistent hash
    use_backend %[{pinned}] if {{ {pinned} -m found }}
    default_backend edge_nodes

backend edge_nodes
    # the same project, the same node; no project named: round robin
    balance hdr({ROUTE_HEADER})
    hash-type consistent
    option httpchk GET {check_path}
{servers}

{pins}
"""


class RuntimeApi:
    """HAProxy's runtime API on its admin socket (``stats socket ... level admin``): pins are
    map entries, changed live, no reload, and written to the map file as well, so that they
    outlive a reload or a restart (the file must exist before HAProxy starts: an empty one for
    no pins)."""

    def __init__(self, admin_socket: Path, pins_map: Path, timeout_s: float = 5.0) -> None:
        self.admin_socket = admin_socket
        self.pins_map = pins_map
        self.timeout_s = timeout_s

    def command(self, line: str) -> str:
        """One command, its answer (the socket closes after it: non-interactive mode)."""
        if "\n" in line or ";" in line:
            raise ValueError("one command at a time")
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(self.timeout_s)
            s.connect(str(self.admin_socket))
            s.sendall(line.encode() + b"\n")
            chunks = []
            while chunk := s.recv(65536):
                chunks.append(chunk)
        return b"".join(chunks).decode(errors="replace")

    def pins(self) -> dict[str, str]:
        """The pinned projects and their nodes."""
        pins: dict[str, str] = {}
        for line in self.command(f"show map {self.pins_map}").splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[2].startswith("pin_"):
                pins[parts[1]] = parts[2][len("pin_") :]
        return pins

    def pin(self, project_id: str, node: str) -> None:
        """Send every request for ``project_id`` to ``node`` from now on."""
        _check_project(project_id)
        if not NODE_NAME.fullmatch(node):
            raise ValueError(f"not a node name: {node!r}")
        pins = self.pins()
        verb = "set" if project_id in pins else "add"
        _expect_done(self.command(f"{verb} map {self.pins_map} {project_id} {pin_backend(node)}"))
        self._save({**pins, project_id: node})

    def unpin(self, project_id: str) -> None:
        """Back to the consistent hash for ``project_id``."""
        _check_project(project_id)
        pins = self.pins()
        if pins.pop(project_id, None) is not None:
            _expect_done(self.command(f"del map {self.pins_map} {project_id}"))
        self._save(pins)

    def set_state(self, node: str, state: str) -> None:
        """``drain``: HAProxy sends ``node`` no new request (its projects hash to the others);
        ``ready``: back in the hash."""
        if not NODE_NAME.fullmatch(node) or state not in ("drain", "ready"):
            raise ValueError(f"not a node name: {node!r}" if state in ("drain", "ready") else state)
        for backend in ("edge_nodes", pin_backend(node)):
            answer = self.command(f"set server {backend}/{node} state {state}")
            if answer.strip():
                raise RuntimeError(f"HAProxy refused: {answer.strip()}")

    def _save(self, pins: dict[str, str]) -> None:
        """``pins``, the live ones, written to the map file (a new file moved over the old)."""
        lines = "".join(f"{p} {pin_backend(n)}\n" for p, n in sorted(pins.items()))
        written = self.pins_map.with_name(self.pins_map.name + ".new")
        try:
            written.write_text(lines)
            written.replace(self.pins_map)
        except OSError as exc:
            raise RuntimeError(
                f"the pins changed live, but {self.pins_map} could not be written "
                f"({exc.strerror}): they last until HAProxy reloads"
            ) from None


def _check_project(project_id: str) -> None:
    if not re.fullmatch(PROJECT_ID, project_id):
        raise ValueError(f"not a project id: {project_id!r}")


def _expect_done(answer: str) -> None:
    # the runtime API answers an empty line when a map command worked, and words when not
    if answer.strip():
        raise RuntimeError(f"HAProxy refused: {answer.strip()}")
