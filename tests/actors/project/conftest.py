"""A project actor on a real store in a temp dir, driven by messages: no HTTP, no node."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from actors.project.harness import ECHO, EchoProvider, Harness
from support.nodes import node_settings

from edge.actors.context import NodeContext
from edge.actors.keyindex import KeyIndex
from edge.actors.project import ProjectActor
from edge.actors.rates import ProjectRates
from edge.actors.registry import Actor, ActorRef, open_registry
from edge.providers.registry import PROVIDERS
from edge.sealing import Sealer
from edge.signing import Signer
from edge.store.env import open_store
from edge.store.writer import open_writer


@pytest.fixture
async def harness(tmp_path) -> AsyncIterator[Harness]:  # type: ignore[no-untyped-def]
    settings = node_settings(tmp_path / "data")
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    with open_store(tmp_path / "store", map_size=2**26) as store:
        async with open_writer(store) as writer, httpx.AsyncClient() as http:
            ctx: NodeContext

            def spawn(project_id: str, ref: ActorRef) -> Actor:
                return ProjectActor.load(ctx, project_id, ref)

            async with open_registry(spawn, idle_s=3600) as registry:
                ctx = NodeContext(
                    settings=settings,
                    store=store,
                    writer=writer,
                    registry=registry,
                    sealer=Sealer(settings.secret_key),
                    signer=Signer.load(settings.data_dir),
                    http=http,
                    keys=KeyIndex(store),
                    manage_rates=ProjectRates(settings, tier=""),
                    bound_url="http://127.0.0.1:9",
                    public_url="http://127.0.0.1:9",
                )
                yield Harness(ctx, registry)


@pytest.fixture
def echo(monkeypatch: pytest.MonkeyPatch) -> EchoProvider:
    """The echo provider, registered for this test."""
    monkeypatch.setitem(PROVIDERS, "echo", ECHO)
    EchoProvider.gate = None
    return ECHO
