"""Start real nodes for tests: in this trio run, or as a separate process that can be killed."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from edge.config import NODE_FILE, Settings, read_admin_token
from support.waits import bound

# The tests' provider simulators listen on loopback: allowed as an operator would allow them.
SIMULATOR_HOSTS = "127.0.0.1"


def node_settings(data_dir: Path, **overrides: object) -> Settings:
    overrides.setdefault("provider_hosts_allow", frozenset({SIMULATOR_HOSTS}))
    # no test reaches a real provider (saving credentials tries them: edge.providers.checking)
    overrides.setdefault("provider_hosts_only", True)
    overrides.setdefault("port", 0)
    return Settings.load(data_dir, host="127.0.0.1", **overrides)


class NodeProcess:
    """``edge serve`` in a child process, on port 0; the URL is read from the data dir."""

    def __init__(
        self, data_dir: Path, env: dict[str, str] | None = None, args: tuple[str, ...] = ()
    ) -> None:
        self.data_dir = data_dir
        self.args = args
        self.env = {
            "EDGE_PROVIDER_HOSTS_ALLOW": SIMULATOR_HOSTS,
            "EDGE_PROVIDER_HOSTS_ONLY": "1",
            **os.environ,
            **(env or {}),
        }
        self.proc: subprocess.Popen[bytes] | None = None
        self.url = ""
        self.log = data_dir.parent / f"{data_dir.name}-node.log"

    def start(self, timeout_s: float = 20.0) -> NodeProcess:
        node_file = self.data_dir / NODE_FILE
        if node_file.exists():
            node_file.unlink()  # left behind by a killed node
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "edge",
                    "serve",
                    "--port",
                    "0",
                    "--data",
                    str(self.data_dir),
                    *self.args,
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                env=self.env,
            )
        deadline = time.monotonic() + bound(timeout_s)
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"node exited early:\n{self.log.read_text()}")
            try:
                info = json.loads(node_file.read_text())
                if info["pid"] == self.proc.pid:
                    self.url = info["url"]
                    return self
            except (OSError, ValueError, KeyError):
                pass
            time.sleep(0.05)
        raise RuntimeError(f"node did not start:\n{self.log.read_text()}")

    @property
    def admin_token(self) -> str:
        return read_admin_token(self.data_dir)

    def kill(self) -> None:
        """SIGKILL: no drain, no clean close; what was acknowledged must survive anyway."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=bound(10))

    def terminate(self) -> int:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=bound(20))


class DemoProcess:
    """``edge serve --demo`` in a child process; ``found`` holds what it printed."""

    NAMES = ("shop page", "node", "project", "test key")

    def __init__(
        self, data_dir: Path | None, *, command: list[str] | None = None, cwd: Path | None = None
    ) -> None:
        """``command``: what starts it (default ``python -m edge serve --demo --port 0 --data
        data_dir``), run in ``cwd``."""
        argv = [sys.executable, "-m", "edge", "serve", "--demo", "--port", "0"]
        if data_dir is not None:
            argv += ["--data", str(data_dir)]
        self.proc = subprocess.Popen(
            command or argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            cwd=cwd,
        )
        assert self.proc.stdout is not None
        self.found: dict[str, str] = {}
        deadline = time.monotonic() + bound(30)
        while time.monotonic() < deadline and len(self.found) < len(self.NAMES):
            line = self.proc.stdout.readline()
            for name in self.NAMES:
                match = re.match(rf"\s+{name}:\s+(\S+)", line)
                if match:
                    self.found[name] = match.group(1).rstrip("/")
        if len(self.found) < len(self.NAMES):
            self.stop()
            raise RuntimeError(f"the demo did not start: {self.found}")

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGINT)
        code = self.proc.wait(timeout=bound(20))
        assert self.proc.stdout is not None
        self.proc.stdout.close()
        return code
