"""docs/cluster.md's "Bringing a cluster up, step by step", run as printed: each ``sh
cluster-step:NAME`` block of it, with bash, on loopback. The test is the operator's machines: one
working directory, a PostgreSQL server of its own (its roles are the server's, not a
database's), free ports, and the variables the page says its shell has. It starts the steps that
stay in the foreground (the nodes, HAProxy) in the background, owns them and stops them. A
documented command that fails fails the test, with the step's name and what it said.

Skipped with a reason without PostgreSQL's binaries, psycopg or haproxy (CI requires them)."""

from __future__ import annotations

import os
import re
import signal
import socket
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest
import trio
from support.client import Admin
from support.haproxy import HAPROXY, require_haproxy
from support.postgres import PostgresServer, bin_dir, execute, require_psycopg, running_postgres
from support.waits import bound, until

require_psycopg()
require_haproxy()

from edge.signing import Signer  # noqa: E402

DOC = Path(__file__).resolve().parents[2] / "docs" / "cluster.md"
STEP = re.compile(r"^```sh cluster-step:(\S+)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
# in the page's order; a step added there must be run here too
STEPS = ("role", "role-grant", "init", "config", "node", "haproxy-config", "haproxy", "check")
KEYS = "cluster-keys.env"  # the file the init step writes and the others read


def documented_steps() -> dict[str, str]:
    found = STEP.findall(DOC.read_text(encoding="utf-8"))
    assert tuple(name for name, _ in found) == STEPS, "docs/cluster.md's steps changed"
    return dict(found)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def server() -> Iterator[PostgresServer]:
    """A server of this test's own: step 1 makes the role ``edge``, and roles are server-wide."""
    with running_postgres() as running:
        yield running


class Operator:
    """The shell the page's steps run in: its variables, its working directory, and the
    processes of the steps that stay in the foreground."""

    def __init__(self, cwd: Path, server: PostgresServer) -> None:
        self.cwd = cwd
        self.ports = {name: free_port() for name in ("node1", "node2", "proxy")}
        path = [Path(sys.executable).parent, bin_dir(), Path(HAPROXY).parent]
        inherited = {
            k: v for k, v in os.environ.items() if not k.startswith(("EDGE_", "PG", "NODE"))
        }
        self.env = {
            **inherited,
            "PATH": os.pathsep.join([*map(str, path), inherited.get("PATH", "/usr/bin:/bin")]),
            # the variables the page sets before its steps
            "EDGE_STORE": f"postgresql://edge@/edge?host={server.socket_dir}",
            "EDGE_CONFIG": str(cwd / "etc" / "edge.toml"),
            "PUBLIC_URL": "https://pay.example",
            "PROXY_HOST": "127.0.0.1",
            "PROXY_PORT": str(self.ports["proxy"]),
            "NODE1": f"127.0.0.1:{self.ports['node1']}",
            "NODE2": f"127.0.0.1:{self.ports['node2']}",
            # not the page's: a test's node never calls a real provider
            "EDGE_PROVIDER_HOSTS_ONLY": "1",
        }
        # step 1's shell: PostgreSQL's superuser, on the database's machine
        self.superuser = {"PGHOST": str(server.socket_dir), "PGUSER": "postgres"}
        self.proxy_url = f"http://127.0.0.1:{self.ports['proxy']}"

    def node(self, number: int) -> dict[str, str]:
        """Node ``number``'s own variables (step 4)."""
        return {
            "NODE_ID": f"node{number}",
            "NODE_HOST": "127.0.0.1",
            "NODE_PORT": str(self.ports[f"node{number}"]),
            "NODE_DATA": str(self.cwd / f"node{number}-data"),
        }

    async def run(self, name: str, text: str, **env: str) -> str:
        """A step run to its end; what it printed. It must succeed."""
        done = await trio.run_process(
            _bash(text),
            cwd=self.cwd,
            env={**self.env, **env},
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
        said = done.stdout.decode() + done.stderr.decode()
        assert done.returncode == 0, f"step {name} failed ({done.returncode}):\n{text}\n{said}"
        return done.stdout.decode()

    @asynccontextmanager
    async def background(self) -> AsyncIterator[Background]:
        started = Background(self)
        try:
            yield started
        finally:
            with trio.CancelScope(shield=True):
                await started.stop()


class Background:
    """The steps that stay in the foreground, each in a process group of its own: a stop reaches
    the shell and the command it runs."""

    def __init__(self, operator: Operator) -> None:
        self.operator = operator
        self.processes: list[trio.Process] = []

    async def start(self, name: str, text: str, ready_url: str, **env: str) -> None:
        """Start the step; back once ``ready_url/readyz`` answers 200."""
        log = self.operator.cwd / f"{name}.log"
        with log.open("wb") as out:
            process = await trio.lowlevel.open_process(
                _bash(text),
                cwd=self.operator.cwd,
                env={**self.operator.env, **env},
                stdout=out,
                stderr=out,
                start_new_session=True,
            )
        self.processes.append(process)

        async def ready() -> bool:
            if process.returncode is not None:
                said = log.read_text()
                raise AssertionError(f"step {name} exited ({process.returncode}):\n{said}")
            try:
                async with httpx.AsyncClient() as http:
                    return (await http.get(f"{ready_url}/readyz")).status_code == 200
            except httpx.TransportError:
                return False

        await until(ready, what=f"step {name} serving", timeout_s=30, every=0.1)

    async def stop(self) -> None:
        """The last started first (HAProxy, then the nodes, whose clean stop gives their leases
        back)."""
        for process in reversed(self.processes):
            await _stop(process)


async def _stop(process: trio.Process) -> None:
    """SIGTERM to the step's group, then its shell's end and its command's (a node draining);
    what is left of it after 20 s is killed, and the test fails."""
    group = process.pid
    _signal_group(group, signal.SIGTERM)
    try:
        with trio.fail_after(bound(20)):
            await process.wait()  # reaped: a zombie shell would keep the group alive
        await until(lambda: not _signal_group(group, 0), what="the step stopped", timeout_s=20)
    except (trio.TooSlowError, AssertionError):
        _signal_group(group, signal.SIGKILL)
        await process.wait()
        raise


def _bash(text: str) -> list[str]:
    """A step as the operator's bash runs it, stopping at its first failing command."""
    return ["bash", "-euo", "pipefail", "-c", text]


def _signal_group(group: int, sig: int) -> bool:
    """Whether the group still had a process."""
    try:
        os.killpg(group, sig)
    except ProcessLookupError:
        return False
    return True


async def sourced(operator: Operator, name: str) -> str:
    """A variable of the keys file, as the page's steps read it (a shell sourcing it)."""
    return await operator.run(f"read {name}", f'set -a; . ./{KEYS}; set +a; printf %s "${name}"')


async def test_the_documented_steps_bring_up_a_cluster_that_serves_through_haproxy(
    tmp_path: Path, server: PostgresServer
) -> None:
    steps = documented_steps()
    operator = Operator(tmp_path, server)
    await operator.run("role", steps["role"], **operator.superuser)
    await operator.run("init", steps["init"])
    assert (tmp_path / KEYS).stat().st_mode & 0o777 == 0o600
    await operator.run("config", steps["config"])
    async with operator.background() as background:
        for number in (1, 2):
            node = operator.node(number)
            url = f"http://127.0.0.1:{node['NODE_PORT']}"
            await background.start(f"node{number}", steps["node"], url, **node)
        await operator.run("haproxy-config", steps["haproxy-config"])
        await background.start("haproxy", steps["haproxy"], operator.proxy_url)
        said = await operator.run("check", steps["check"])
        assert _alive(said) == {"node1", "node2"}, said
        assert "no pinned projects" in said and "no projects" in said, said
        await _a_project_made_and_read_through_haproxy(operator)
        await _both_nodes_sign_with_the_keys_file(operator)


def _alive(said: str) -> set[str]:
    """The nodes ``edge cluster nodes`` listed alive."""
    return {line.split()[0] for line in said.splitlines() if line.split()[2:3] == ["alive"]}


async def _a_project_made_and_read_through_haproxy(operator: Operator) -> None:
    admin = Admin(operator.proxy_url, await sourced(operator, "EDGE_ADMIN_TOKEN"))
    try:
        project_id = await admin.project("Bring-up shop")

        # a project whose lease another node holds answers a retryable 503 (docs/cluster.md)
        async def read_back() -> httpx.Response | None:
            answer = await admin.http.get(f"/api/manage/projects/{project_id}")
            assert answer.status_code in (200, 503), (answer.status_code, answer.text)
            return answer if answer.status_code == 200 else None

        found = await until(read_back, what="the project read through HAProxy", timeout_s=40)
        assert found.json()["name"] == "Bring-up shop"
    finally:
        await admin.aclose()


async def _both_nodes_sign_with_the_keys_file(operator: Operator) -> None:
    kid = Signer.load(Path("/nonexistent"), await sourced(operator, "EDGE_SIGNING_KEY")).kid
    async with httpx.AsyncClient() as http:
        for number in (1, 2):
            port = operator.node(number)["NODE_PORT"]
            keys = (await http.get(f"http://127.0.0.1:{port}/.well-known/cm-signing-keys")).json()
            assert [key["kid"] for key in keys["keys"]] == [kid]


async def test_the_documented_grant_serves_a_role_that_does_not_own_its_database(
    tmp_path: Path, server: PostgresServer
) -> None:
    steps = documented_steps()
    operator = Operator(tmp_path, server)
    await operator.run("role-grant", steps["role-grant"], **operator.superuser)
    await operator.run("init", steps["init"])
    tables = await trio.to_thread.run_sync(
        execute,
        server.url("edge"),
        "SELECT schemaname FROM pg_tables WHERE tablename IN ('store_meta', 'leases')"
        " GROUP BY schemaname",
    )
    assert tables == [("edge",)]  # the role's own schema: it may not create in public
    await operator.run("config", steps["config"])
    async with operator.background() as background:
        node = operator.node(1)
        url = f"http://127.0.0.1:{node['NODE_PORT']}"
        await background.start("node1", steps["node"], url, **node)
        admin = Admin(url, await sourced(operator, "EDGE_ADMIN_TOKEN"))
        try:  # it writes its tables too
            project_id = await admin.project("Granted shop")
            assert (await admin.ok("GET", f"/api/manage/projects/{project_id}"))["id"] == project_id
        finally:
            await admin.aclose()
