"""Nodes of one cluster in the test's own process, on one PostgreSQL store (EDGE_STORE)."""

from __future__ import annotations

import shutil
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path

import trio

from edge.config import ADMIN_TOKEN_FILE, SECRET_KEY_FILE
from edge.node import RunningNode, run_node
from edge.signing import SIGNING_KEY_FILE
from support.nodes import node_settings

LEASE_S = 4.0  # beaten every 1.3 s: a node of a busy test machine may stall for over 1 s


@asynccontextmanager
async def cluster_node(
    nursery: trio.Nursery,
    data: Path,
    pg_url: str,
    node_id: str,
    like: Path | None = None,
    clock_off_s: float = 0.0,
) -> AsyncIterator[RunningNode]:
    """A node of the cluster; ``like``: a data dir whose sealing key, signing key and admin
    token it shares (cluster nodes open each other's sealed secrets, and sign alike);
    ``clock_off_s``: how far its machine's wall clock is ahead (behind, below 0)."""
    _data_dir(data, like)
    settings = node_settings(data, store_url=pg_url, node_id=node_id, lease_s=LEASE_S)
    off_ms = round(clock_off_s * 1000)

    def wall_ms() -> int:
        return time.time_ns() // 1_000_000 + off_ms

    running: RunningNode = await nursery.start(partial(run_node, settings, wall_ms=wall_ms))
    try:
        yield running
    finally:
        running.stop.set()


def _data_dir(data: Path, like: Path | None) -> None:
    data.mkdir(parents=True)
    if like is not None:
        for name in (SECRET_KEY_FILE, SIGNING_KEY_FILE, ADMIN_TOKEN_FILE):
            shutil.copy(like / name, data / name)


@asynccontextmanager
async def serving(data: Path, **settings: object) -> AsyncIterator[RunningNode]:
    """A node on ``data`` (LMDB, or in cluster mode with ``store_url``) in a nursery of its
    own, stopped on exit."""
    async with trio.open_nursery() as nursery:
        running: RunningNode = await nursery.start(
            partial(run_node, node_settings(data, **settings))
        )
        try:
            yield running
        finally:
            running.stop.set()
