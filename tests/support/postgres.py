"""A throwaway PostgreSQL server for the tests: Debian's binaries (``/usr/lib/postgresql/*/bin``),
``initdb`` into a temporary directory, listening only on a unix socket inside it (no TCP port,
so nothing to collide with), stopped and removed at the end.

PostgreSQL refuses to run as root: as root, the server runs as the ``postgres`` system user that
Debian's package makes, in a directory it owns (``runuser``). Without the binaries, or without
libpq for psycopg, the tests skip with the reason; under ``EDGE_REQUIRE_POSTGRES=1`` (CI) they
fail instead.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from itertools import count
from pathlib import Path
from typing import Any

import pytest

REQUIRE_ENV = "EDGE_REQUIRE_POSTGRES"
BINARIES = Path("/usr/lib/postgresql")
SYSTEM_USER = "postgres"


def _missing(reason: str) -> None:
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"PostgreSQL tests required ({REQUIRE_ENV}=1) but {reason}")
    pytest.skip(reason, allow_module_level=True)


def require_psycopg() -> None:
    """Skip (or fail, under ``EDGE_REQUIRE_POSTGRES=1``) a module when psycopg cannot load:
    not installed, or no libpq on the machine. Call it before importing edge.store.postgres."""
    try:
        import psycopg  # noqa: F401
    except ImportError as exc:
        _missing(f"psycopg cannot load ({exc}); install libpq5 and the dev lock")


def bin_dir() -> Path:
    """The newest installed PostgreSQL's binaries, or skip (or fail) saying why."""
    found = sorted(
        (d / "bin" for d in BINARIES.glob("*") if (d / "bin" / "pg_ctl").exists()),
        key=lambda b: int(b.parent.name) if b.parent.name.isdigit() else 0,
    )
    if not found:
        _missing(f"no PostgreSQL binaries under {BINARIES}/*/bin (apt-get install postgresql)")
    return found[-1]


class PostgresServer:
    """One server; ``new_database()`` gives each test a database of its own."""

    def __init__(self, binaries: Path, root: Path, *, fsync: bool) -> None:
        self.binaries = binaries
        self.root = root
        self.data = root / "data"
        self.socket_dir = root / "socket"
        self.fsync = fsync
        self._as: list[str] = []
        self._names = count(1)

    def start(self) -> None:
        if os.geteuid() == 0:
            user = pwd.getpwnam(SYSTEM_USER)  # KeyError: no such user to run it as
            os.chown(self.root, user.pw_uid, user.pw_gid)
            self._as = ["runuser", "-u", SYSTEM_USER, "--"]
        self._run("mkdir", str(self.socket_dir))
        self._run(
            str(self.binaries / "initdb"),
            *("-D", str(self.data), "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync"),
        )
        self._start()

    def _start(self) -> None:
        fsync = "on" if self.fsync else "off"
        options = f"-k {self.socket_dir} -c listen_addresses='' -c fsync={fsync}"
        self._run(
            str(self.binaries / "pg_ctl"),
            *("-D", str(self.data), "-l", str(self.root / "log"), "-o", options, "-w", "start"),
        )

    def stop(self, mode: str = "fast") -> None:
        """``fast``: every session ended, a clean shutdown; ``immediate``: as a crash (the
        next start replays the WAL)."""
        self._run(str(self.binaries / "pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "stop")

    def restart(self, mode: str = "fast") -> None:
        """Stopped in ``mode``, then started again as it was first started."""
        self.stop(mode)
        self._start()

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@/{database}?host={self.socket_dir}"

    def new_database(self) -> str:
        """A new empty database's URL."""
        import psycopg

        name = f"test_{next(self._names)}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return self.url(name)

    def _run(self, *command: str) -> None:
        done = subprocess.run(
            [*self._as, *command], capture_output=True, text=True, cwd=self.root, check=False
        )
        if done.returncode != 0:
            log = self.root / "log"
            tail = log.read_text()[-2000:] if log.exists() else ""
            raise RuntimeError(f"{' '.join(command)} failed: {done.stderr}{done.stdout}{tail}")


@contextmanager
def running_postgres(*, fsync: bool = False) -> Iterator[PostgresServer]:
    """A PostgreSQL server for the duration, or skip (or fail) the caller when there is none.
    ``fsync`` off by default: the tests check behaviour, not durability on power loss."""
    binaries = bin_dir()
    root = Path(tempfile.mkdtemp(prefix="edge-pg-"))
    server = PostgresServer(binaries, root, fsync=fsync)
    try:
        server.start()
        yield server
    finally:
        try:
            if (server.data / "postmaster.pid").exists():
                server.stop()
        finally:
            shutil.rmtree(root, ignore_errors=True)


def execute(url: str, query: str, *params: Any) -> list[tuple[Any, ...]]:
    """One statement on a connection of its own, its rows (none for a statement without). Run
    it in a worker thread from trio: psycopg's async API wants asyncio."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        cursor = conn.execute(query, params)  # type: ignore[call-overload]
        return cursor.fetchall() if cursor.description else []


async def expire_lease(url: str, project: str) -> None:
    """The project's lease ended a second ago, by PostgreSQL's clock."""
    import trio

    await trio.to_thread.run_sync(
        execute,
        url,
        "UPDATE leases SET expires_at = clock_timestamp() - interval '1 second'"
        " WHERE project_id = %s",
        project,
    )


def stored_bytes(url: str) -> bytes:
    """Everything the PostgreSQL store holds (every table's keys and values), as the bytes a
    search for what must never be stored looks through. Run it in a worker thread from trio."""
    import psycopg

    from edge.store.postgres.store import TABLES

    with psycopg.connect(url, autocommit=True) as conn:
        return b"".join(
            bytes(key) + bytes(value)
            for table in TABLES.values()
            for key, value in conn.execute(
                psycopg.sql.SQL("SELECT key, value FROM {}").format(table)
            ).fetchall()
        )
