"""The provider contract suite's fixtures: ``driver`` is the provider named by the test's
``provider`` parameter, its simulator running on port 0 and a project wired to it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import trio
from contract.drivers import DRIVERS, Driver
from support.client import Admin

from edge.node import RunningNode

PROVIDERS = tuple(DRIVERS)


def providers(**lacking: str) -> list[Any]:
    """Every provider, as ``provider`` parameters; one that lacks the behaviour (``name=why``)
    is skipped, saying why."""
    return [
        pytest.param(name, marks=pytest.mark.skip(reason=lacking[name]))
        if name in lacking
        else name
        for name in PROVIDERS
    ]


@pytest.fixture
async def driver(
    provider: str, node: RunningNode, admin: Admin, http: httpx.AsyncClient
) -> AsyncIterator[Driver]:
    kind = DRIVERS[provider]
    simulator = kind.simulator()
    async with trio.open_nursery() as nursery:
        await nursery.start(simulator.run)
        made = kind(simulator, admin, http, node)
        await made.setup()
        yield made
        simulator.stop()
        # at once: the node still holds a kept-alive connection to the simulator, which a
        # graceful stop would wait out
        nursery.cancel_scope.cancel()
