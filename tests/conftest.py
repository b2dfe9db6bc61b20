"""Shared fixtures: a real node on port 0 in this trio run, a management client for it, a
real store with its writer (for the store and queue workers' tests), and a throwaway
PostgreSQL server (one a session, started on first use) with a database for each test that asks
for ``pg_url``.

``EDGE_TEST_STORE=postgresql`` (``make test-postgres``) runs the ``node`` fixture's node on the
PostgreSQL engine in cluster mode (a database of its own, under its own leases) instead of
LMDB: the same tests, the other engine."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from functools import partial
from pathlib import Path

import httpx
import pytest
import trio
from support.client import Admin
from support.nodes import node_settings
from support.postgres import PostgresServer, running_postgres
from support.waits import bound

from edge.node import RunningNode, run_node
from edge.sim.btcpay import BTCPaySimulator
from edge.sim.paddle import PaddleSimulator
from edge.sim.paypal import PayPalSimulator
from edge.sim.stripe import StripeSimulator
from edge.store.lmdb.store import Store, open_store
from edge.store.writer import StoreWriter, open_writer

TEST_STORE = "EDGE_TEST_STORE"
# at the end of a run: the suites skipped and why, and the time each directory took; the
# slowest files started first
pytest_plugins = ("support.suite_report",)


@pytest.fixture
async def node(request, tmp_path) -> AsyncIterator[RunningNode]:  # type: ignore[no-untyped-def]
    engine: dict[str, object] = {}
    if os.environ.get(TEST_STORE) == "postgresql":
        engine["store_url"] = request.getfixturevalue("pg_url")
    marked = request.node.get_closest_marker("node_settings")
    if marked is not None:
        engine.update(marked.kwargs)
    async with trio.open_nursery() as nursery:
        running: RunningNode = await nursery.start(
            partial(run_node, node_settings(tmp_path / "data", **engine))
        )
        yield running
        running.stop.set()


@pytest.fixture
async def admin(node: RunningNode) -> AsyncIterator[Admin]:
    client = Admin(node.url, node.ctx.settings.admin_token)
    yield client
    await client.aclose()


@pytest.fixture
async def http(node: RunningNode) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=node.url, timeout=bound(30.0)) as client:
        yield client


@pytest.fixture
async def sim() -> AsyncIterator[StripeSimulator]:
    """A Stripe simulator on port 0."""
    simulator = StripeSimulator()
    async with simulator.serving():
        yield simulator


@pytest.fixture
async def paypal() -> AsyncIterator[PayPalSimulator]:
    """A PayPal simulator on port 0."""
    simulator = PayPalSimulator()
    async with simulator.serving():
        yield simulator


@pytest.fixture
async def btcpay() -> AsyncIterator[BTCPaySimulator]:
    """A BTCPay Server simulator on port 0 that retries a failed delivery three times, quickly."""
    simulator = BTCPaySimulator(retry_delays_s=(0.05, 0.1, 0.2))
    async with simulator.serving():
        yield simulator


@pytest.fixture
async def paddle() -> AsyncIterator[PaddleSimulator]:
    """A Paddle Billing simulator on port 0."""
    simulator = PaddleSimulator()
    async with simulator.serving():
        yield simulator


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    with open_store(tmp_path / "store", 2**26) as opened:
        yield opened


@pytest.fixture
async def writer(store: Store) -> AsyncIterator[StoreWriter]:
    async with open_writer(store) as opened:
        yield opened


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    with running_postgres() as server:
        yield server


@pytest.fixture
def pg_url(postgres: PostgresServer) -> str:
    return postgres.new_database()
