"""A node started on PostgreSQL with a role that lacks a right stops with one line naming the
grant to run, not a traceback: a role that may not create in its database (PostgreSQL 15 took
``CREATE`` on ``public`` from every role), and a role that may not use tables another made."""

from __future__ import annotations

import os
import secrets
import sys
from pathlib import Path

import trio
from support.postgres import PostgresServer, execute, require_psycopg

require_psycopg()


async def _role_and_database(postgres: PostgresServer) -> tuple[str, str]:
    """A role that logs in and a database of its name it does not own."""
    name = f"grants_{secrets.token_hex(4)}"
    for statement in (f"CREATE ROLE {name} LOGIN", f"CREATE DATABASE {name}"):
        await trio.to_thread.run_sync(execute, postgres.url(), statement)
    return name, f"postgresql://{name}@/{name}?host={postgres.socket_dir}"


async def _serve(data: Path, url: str) -> str:
    started = await trio.run_process(
        [sys.executable, "-m", "edge", "serve", "--port", "0", "--data", str(data)],
        env={**os.environ, "EDGE_STORE": url},
        capture_stdout=True,
        capture_stderr=True,
        check=False,
    )
    assert started.returncode != 0
    return (started.stdout + started.stderr).decode()


async def test_a_role_that_may_not_create_is_told_the_grant(tmp_path, postgres) -> None:
    role, url = await _role_and_database(postgres)
    said = await _serve(tmp_path / "d", url)
    assert "Traceback" not in said, said
    assert f"GRANT CREATE ON DATABASE {role} TO {role}" in said, said
    assert len(said.strip().splitlines()) == 1, said


async def test_a_role_that_may_not_use_the_tables_is_told_the_grant(tmp_path, postgres) -> None:
    role, url = await _role_and_database(postgres)
    # the tables made by another role (the superuser): the node's role has no rights on them
    from edge.store.postgres.store import create_schema

    def made_by_superuser() -> None:
        import psycopg

        with psycopg.connect(postgres.url(role), autocommit=True) as conn:
            create_schema(conn)
            conn.execute(f"GRANT SELECT ON store_records TO {role}")  # one right is not all

    await trio.to_thread.run_sync(made_by_superuser)
    said = await _serve(tmp_path / "d", url)
    assert "Traceback" not in said, said
    assert "GRANT SELECT, INSERT, UPDATE, DELETE ON " in said and f"TO {role}" in said, said
    assert "store_records" in said and "leases" in said, said
    assert len(said.strip().splitlines()) == 1, said
