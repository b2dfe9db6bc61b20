"""A real store and its writer for the queue workers' tests (follow-ups, notifications)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from edge.store.env import Store, open_store
from edge.store.writer import StoreWriter, open_writer


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    with open_store(tmp_path / "store", 2**26) as opened:
        yield opened


@pytest.fixture
async def writer(store: Store) -> AsyncIterator[StoreWriter]:
    async with open_writer(store) as opened:
        yield opened
