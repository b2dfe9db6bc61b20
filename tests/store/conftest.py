from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from support.engines import OpenEngine, open_engine


@pytest.fixture(params=["lmdb", "postgresql"])
async def engine(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[OpenEngine]:
    """Each engine in turn, empty, with its writer."""
    async for opened in open_engine(request, tmp_path):
        yield opened
