"""The provider contract suite's fixtures: ``driver`` is the provider named by the test's
``provider`` parameter, its simulator running on port 0 and a project wired to it."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from contract.drivers import Driver, driver_kind
from support.client import Admin

from edge.node import RunningNode


@pytest.fixture
async def driver(
    provider: str, node: RunningNode, admin: Admin, http: httpx.AsyncClient
) -> AsyncIterator[Driver]:
    kind = driver_kind(provider)
    simulator = kind.simulator()
    async with simulator.serving():
        made = kind(simulator, admin, http, node)
        await made.setup()
        yield made
