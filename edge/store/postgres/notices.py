"""Word between the nodes of a cluster, through PostgreSQL's ``LISTEN``/``NOTIFY`` on one
channel: a node asks the holder of a project's lease to hand it over, the holder says it is
handing it over and then that it is free (``edge.actors.ownership``). No node needs another's
address or a secret of its own for it: the store they share already trusts them all.

A notice is a hint, never a fact: one sent while a node's listening connection is down is
lost, so every decision is still the lease table's (a node that missed ``free`` tries to take
the lease anyway once its wait is over).

Listening is a blocking wait in psycopg's sync API, so it runs in a thread of its own with a
connection of its own, and hands each payload to the trio loop. When PostgreSQL goes away the
thread connects again, backing off; the outage itself is told once (``outage``).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

import psycopg
import trio

if TYPE_CHECKING:
    from edge.store.postgres.store import ConnectionPool

CHANNEL = "edge_leases"
WAKE_S = 1.0  # how often the listening thread looks whether the node is stopping
FIRST_LISTEN_S = 10.0  # PostgreSQL out of reach at start: serve meanwhile, listen once it is back
RECONNECT_S = (0.1, 5.0)  # first and longest pause between connection attempts


class Notices:
    def __init__(self, pool: ConnectionPool) -> None:
        self._pool = pool
        self._outage = pool.outage  # the listener's failures are the store's outage too

    async def send(self, payload: str) -> None:
        """Tell every listening node (this one too); ``StoreUnavailable`` if PostgreSQL is
        out of reach."""
        await self._pool.run(
            lambda conn: conn.execute("SELECT pg_notify(%s, %s)", (CHANNEL, payload))
        )

    async def listen(
        self,
        heard: Callable[[str], None],
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Call ``heard(payload)`` in this task for every notice, until cancelled."""
        send, receive = trio.open_memory_channel[str](math.inf)
        stop = threading.Event()
        listening = trio.Event()
        token = trio.lowlevel.current_trio_token()

        def deliver(payload: str) -> None:
            try:
                trio.from_thread.run_sync(send.send_nowait, payload, trio_token=token)
            except (trio.RunFinishedError, trio.BrokenResourceError, trio.ClosedResourceError):
                stop.set()  # the node has stopped listening

        def started() -> None:
            try:
                trio.from_thread.run_sync(listening.set, trio_token=token)
            except trio.RunFinishedError:
                stop.set()

        # a daemon: a stopping node never waits for its blocking wait to end
        threading.Thread(
            target=self._listen, args=(deliver, started, stop), name="edge-notices", daemon=True
        ).start()
        try:
            with trio.move_on_after(FIRST_LISTEN_S):
                await listening.wait()
            task_status.started()
            async with receive:
                async for payload in receive:
                    heard(payload)
        finally:
            stop.set()

    def _listen(
        self,
        deliver: Callable[[str], None],
        started: Callable[[], None],
        stop: threading.Event,
    ) -> None:
        pause = RECONNECT_S[0]
        while not stop.is_set():
            try:
                with psycopg.connect(self._pool.url, autocommit=True) as conn:
                    conn.execute(f"LISTEN {CHANNEL}")
                    self._outage.ok()
                    started()
                    pause = RECONNECT_S[0]
                    while not stop.is_set():
                        for notice in conn.notifies(timeout=WAKE_S):
                            deliver(notice.payload)
            except psycopg.OperationalError as exc:
                if stop.is_set():  # the node has stopped: whatever the server does is not news
                    return
                self._outage.failed(exc)
            stop.wait(pause)
            pause = min(pause * 2, RECONNECT_S[1])
