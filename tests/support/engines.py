"""Both store engines behind one fixture (``tests/store/conftest.py``): the LMDB store, and
PostgreSQL's when psycopg loads (else that case skips, or fails under
``EDGE_REQUIRE_POSTGRES=1``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from edge.store.lmdb.store import open_store
from edge.store.writer import StoreWriter, open_writer
from support.postgres import require_psycopg


@dataclass
class OpenEngine:
    name: str
    reads: Any
    writer: StoreWriter


async def open_engine(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[OpenEngine]:
    if request.param == "lmdb":
        with open_store(tmp_path / "s", map_size=2**26) as store:
            async with open_writer(store) as writer:
                yield OpenEngine("lmdb", store, writer)
        return
    require_psycopg()
    from edge.store.postgres.store import open_postgres_store

    url = request.getfixturevalue("pg_url")
    async with open_postgres_store(url) as pg, open_writer(pg) as writer:
        yield OpenEngine("postgresql", pg, writer)
