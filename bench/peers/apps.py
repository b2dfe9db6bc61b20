"""Starting the peers as ``bench.servers`` starts the node: a child process pinned to the
servers' CPU, its output in a log file, stopped with SIGTERM.

The peers are a merchant's apps and know nothing of the bench, so they do not announce
themselves as the node and the baselines do: each is given a free port and is ready once it
answers a status read with 200 (which also shows its database is reachable and filled).
Each runs with one worker in its usual production setting: ``uvicorn --workers 1`` with
uvloop and httptools (``uvicorn[standard]``), and one Node.js process with
``NODE_ENV=production``. Access logs are off, as the node's Hypercorn has none.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import httpx

from bench.cluster import free_port
from bench.peers.env import PeersEnv
from bench.servers import ROOT, Server, _pinned

HERE = Path(__file__).resolve().parent
PEERS = ("fastapi-postgres", "fastapi-sqlite", "express-postgres")
DESCRIPTIONS = {
    "fastapi-postgres": "FastAPI + uvicorn + stripe-python + PostgreSQL (psycopg 3 pool)",
    "fastapi-sqlite": "FastAPI + uvicorn + stripe-python + SQLite (WAL, synchronous=FULL)",
    "express-postgres": "Express + stripe-node + PostgreSQL (node-postgres Pool)",
}


class PeerServer(Server):
    """A peer on a free port, ready once ``ready_path`` answers 200 to ``ready_headers``."""

    def __init__(
        self,
        name: str,
        argv: list[str],
        log: Path,
        env: dict[str, str],
        ready_path: str,
        ready_headers: dict[str, str],
    ) -> None:
        # no URL file: this class's start finds the peer ready by asking it
        super().__init__(name, argv, log.with_suffix(".url"), log)
        # the project's venv is not the peer's: nothing of it in the peer's environment
        inherited = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
        self.env = {**inherited, **env}
        self.ready_path = ready_path
        self.ready_headers = ready_headers

    def start(self, timeout_s: float = 30.0) -> Server:
        port = str(free_port())
        self.url = f"http://127.0.0.1:{port}"
        argv = [part.replace("{port}", port) for part in self.argv]
        env = {name: value.replace("{port}", port) for name, value in self.env.items()}
        with open(self.log, "ab") as log:
            self.started_at = time.perf_counter()
            self.proc = subprocess.Popen(
                _pinned(argv, self.cpus), stdout=log, stderr=subprocess.STDOUT, env=env, cwd=ROOT
            )
        deadline = time.monotonic() + timeout_s
        with httpx.Client(timeout=5.0) as http:
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"{self.name} exited early; see {self.log}")
                try:
                    answer = http.get(self.url + self.ready_path, headers=self.ready_headers)
                    if answer.status_code == 200:
                        return self
                except httpx.TransportError:
                    pass
                time.sleep(0.05)  # nothing announces that it listens: look again
        self.stop()
        raise RuntimeError(f"{self.name} did not answer in {timeout_s} s; see {self.log}")

    def stop(self, timeout_s: float = 10.0) -> None:
        super().stop(timeout_s)


def peer(
    name: str,
    installed: PeersEnv,
    work: Path,
    settings: dict[str, str],
    ready_path: str,
    ready_headers: dict[str, str],
) -> PeerServer:
    """The peer ``name`` (one of ``PEERS``); ``settings``: its environment (``DATABASE_URL``
    or ``DATABASE_PATH``, ``PROJECTS_FILE``, ``STRIPE_API_KEY``)."""
    log = work / f"{name}.log"
    if name.startswith("fastapi-"):
        module = "fastapi_postgres" if name == "fastapi-postgres" else "fastapi_sqlite"
        argv = [
            str(installed.python),
            *("-m", "uvicorn", f"{module}:app", "--app-dir", str(HERE)),
            *("--host", "127.0.0.1", "--port", "{port}", "--workers", "1"),
            *("--no-access-log", "--log-level", "warning"),
        ]
        env = dict(settings)
    elif name == "express-postgres":
        argv = ["node", str(HERE / "express_app.js")]
        env = {
            **settings,
            "PORT": "{port}",
            "NODE_ENV": "production",
            "NODE_PATH": str(installed.node_modules),
        }
    else:
        raise ValueError(f"no peer {name!r}; the peers: {', '.join(PEERS)}")
    return PeerServer(name, argv, log, env, ready_path, ready_headers)
