"""Child processes under test: the node (``edge serve``) and the baselines, each pinned to the
server CPU so the load generator on the other CPU never steals its time (2 cores).

Every server writes ``{"url", "pid"}`` to a file once it listens; ``start`` waits for that file.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SERVER_CPU = 0
LOAD_CPU = 1


def pin_load_cpu() -> None:
    """Run this process (and the load generators it starts) on the load CPU."""
    if (os.cpu_count() or 1) > 1:
        os.sched_setaffinity(0, {LOAD_CPU})


def _pinned(argv: list[str], cpus: str = str(SERVER_CPU)) -> list[str]:
    if (os.cpu_count() or 1) > 1:
        return ["taskset", "-c", cpus, *argv]
    return argv


def every_cpu() -> str:
    """``Server.cpus`` for a server free to run on any CPU (not the load CPU's alone, which the
    bench process and so its children are pinned to)."""
    return f"0-{(os.cpu_count() or 1) - 1}"


@contextmanager
def worktree(revision: str, path: Path) -> Iterator[Path]:
    """A git worktree of ``revision`` of this repository at ``path``, removed on exit."""
    subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(path), revision],
        check=True,
        capture_output=True,
    )
    try:
        yield path
    finally:
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(path)],
            capture_output=True,
        )


class Server:
    """One server process. ``started_at`` is taken just before the process is created."""

    def __init__(
        self,
        name: str,
        argv: list[str],
        url_file: Path,
        log: Path,
        env: dict[str, str] | None = None,
    ) -> None:
        self.name = name
        self.argv = argv
        self.url_file = url_file
        self.log = log
        self.env = {**os.environ, "EDGE_LOG_LEVEL": "WARNING", **(env or {})}
        self.proc: subprocess.Popen[bytes] | None = None
        self.url = ""
        self.started_at = 0.0
        self.cpus = str(SERVER_CPU)  # taskset's list

    @classmethod
    def node(cls, data_dir: Path, log: Path, env: dict[str, str] | None = None) -> Server:
        argv = [
            sys.executable,
            "-m",
            "edge",
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            "--data",
            str(data_dir),
        ]
        # the bench's Stripe simulator listens on loopback: allowed as an operator would
        env = {"EDGE_PROVIDER_HOSTS_ALLOW": "127.0.0.1", **(env or {})}
        return cls("node", argv, data_dir / "node.json", log, env)

    def run_tree(self, tree: Path) -> None:
        """Run the node of another source tree (a git worktree): its ``edge`` first on the path,
        before the one this process runs from (the server's working directory)."""
        code = (
            f"import sys, runpy; sys.path.insert(0, {str(tree)!r}); import edge; "
            f"assert edge.__file__.startswith({str(tree)!r}), edge.__file__; "
            "runpy.run_module('edge', run_name='__main__')"
        )
        assert self.argv[1:3] == ["-m", "edge"], self.argv
        self.argv[1:3] = ["-c", code]

    @classmethod
    def baseline(cls, kind: str, work: Path) -> Server:
        url_file = work / f"baseline-{kind}.json"
        argv = [sys.executable, "-m", "bench.baselines", kind, str(url_file)]
        return cls(f"baseline-{kind}", argv, url_file, work / f"baseline-{kind}.log")

    def start(self, timeout_s: float = 30.0) -> Server:
        if self.url_file.exists():
            self.url_file.unlink()  # left behind by a killed run
        with open(self.log, "ab") as log:
            self.started_at = time.perf_counter()
            self.proc = subprocess.Popen(
                _pinned(self.argv, self.cpus),
                stdout=log,
                stderr=subprocess.STDOUT,
                env=self.env,
                cwd=ROOT,
            )
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited early; see {self.log}")
            try:
                info = json.loads(self.url_file.read_text())
                if info["pid"] == self._server_pid():
                    self.url = info["url"]
                    return self
            except (OSError, ValueError, KeyError):
                pass
            time.sleep(0.002)
        self.stop()
        raise RuntimeError(f"{self.name} did not start in {timeout_s} s; see {self.log}")

    def _server_pid(self) -> int:
        # taskset execs the server, so the child's pid is the server's.
        assert self.proc is not None
        return self.proc.pid

    @property
    def pid(self) -> int:
        return self._server_pid()

    def rss_mb(self, kind: str = "VmRSS") -> float:
        """Resident size: ``VmRSS`` (all), ``RssAnon`` (heap) or ``RssFile`` (mapped files: the
        LMDB pages the node has touched, which the kernel may drop at will)."""
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith(kind + ":"):
                return int(line.split()[1]) / 1024
        raise RuntimeError(f"no {kind}")

    def stop(self, timeout_s: float = 30.0) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def __enter__(self) -> Server:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
