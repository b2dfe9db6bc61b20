"""A project actor on a real store in a temp dir, driven by messages: no HTTP, no node."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from actors.project.harness import ECHO, EchoProvider, Harness, open_harness

from edge.providers.registry import PROVIDERS


@pytest.fixture
async def harness(tmp_path) -> AsyncIterator[Harness]:  # type: ignore[no-untyped-def]
    async with open_harness(tmp_path) as opened:
        yield opened


@pytest.fixture
def echo(monkeypatch: pytest.MonkeyPatch) -> EchoProvider:
    """The echo provider, registered for this test."""
    monkeypatch.setitem(PROVIDERS, "echo", ECHO)
    EchoProvider.gate = EchoProvider.checkout_gate = None
    EchoProvider.checkouts = []
    EchoProvider.again = []
    return ECHO
