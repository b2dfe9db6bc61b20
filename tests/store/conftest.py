"""A PostgreSQL server for the store's tests, one a session (started on first use), and a
database of its own for each test that asks for ``pg_url``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from support.postgres import PostgresServer, running_postgres


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    with running_postgres() as server:
        yield server


@pytest.fixture
def pg_url(postgres: PostgresServer) -> str:
    return postgres.new_database()
