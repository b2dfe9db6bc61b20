"""Status reads and long polls of transactions and subscriptions (CONTRACT 4.4).

A status read answers from memory, after the commit of what it shows. A long poll (a ``version``
and ``wait_s``) parks until a commit moves the record past that version, or until the timer; the
woken poller gets the status as committed, never a later change still in memory. While the node
stops, long polls are answered at once.
"""

from __future__ import annotations

from typing import Any

import trio

from edge.actors import messages as m
from edge.actors.project.ledger import CACHE_SIZE, Ledger, Reply
from edge.actors.records import status_body
from edge.actors.registry import ActorRef
from edge.errors import NotFound
from edge.store.writer import Ticket


class Polls:
    def __init__(self, ledger: Ledger, ref: ActorRef) -> None:
        self.ledger = ledger
        self._ref = ref  # its ``stopping``: the node is stopping, long polls answer at once
        self._pollers: dict[str, list[tuple[int, Reply]]] = {}
        self._bodies: dict[str, tuple[int, int, bytes]] = {}
        ledger.on_submit(self._submitted)

    @property
    def waiting(self) -> bool:
        """Some long poll is parked."""
        return bool(self._pollers)

    async def get_status(self, msg: m.GetStatus, reply: Reply) -> None:
        record = await self.ledger.record(msg.item_id)
        if record is None:
            raise NotFound("not_found", "No transaction or subscription with this id.")
        if (
            msg.wait_s <= 0
            or msg.version is None
            or record["version"] > msg.version
            or self._ref.stopping
        ):
            self.ledger.reply_read(reply, self.body(record), msg.item_id)
            return
        # Long poll: answered by the commit that changes the record, or by the timer.
        once = _once(reply)
        self._pollers.setdefault(msg.item_id, []).append((msg.version, once))
        self.ledger.ctx.nursery.start_soon(self._time_out, msg.item_id, once, msg.wait_s)

    def body(self, record: dict[str, Any]) -> bytes:
        """The status record as JSON, rendered once per version."""
        if len(self._bodies) > CACHE_SIZE:
            self._bodies.clear()
        return status_body(record, self._bodies)

    def release(self) -> None:
        """Answer every parked long poll now, with the record as it is (read from the store,
        in a task of its own, when it has left memory)."""
        for item_id in list(self._pollers):
            record = self.ledger.cached(item_id)
            for _, once in self._pollers.pop(item_id):
                if record is not None:
                    self.ledger.reply_read(once, self.body(record), item_id)
                else:
                    self.ledger.ctx.nursery.start_soon(self._answer, item_id, once)
        self.ledger.settled()

    async def _answer(self, item_id: str, once: Reply) -> None:
        record = await self.ledger.record(item_id)
        if record is not None:
            self.ledger.reply_read(once, self.body(record), item_id)
        self.ledger.settled()

    async def _time_out(self, item_id: str, once: Reply, wait_s: float) -> None:
        await trio.sleep(wait_s)
        waiting = [(v, r) for v, r in self._pollers.get(item_id, []) if r is not once]
        if waiting:
            self._pollers[item_id] = waiting
        else:
            self._pollers.pop(item_id, None)
        await self._answer(item_id, once)

    def _submitted(self, item_ids: list[str], ticket: Ticket) -> None:
        """Pollers of a record this write changes are woken by its commit, with the status as
        it is now (later changes in memory are not durable yet). The record is in memory: the
        handler writing it has just read it through the ledger."""
        woken = {
            item_id: (record["version"], self.body(record))
            for item_id in item_ids
            if item_id in self._pollers and (record := self.ledger.cached(item_id)) is not None
        }
        if not woken:
            return

        def durable(error: BaseException | None) -> None:
            if error is not None:
                return
            for item_id, (version, body) in woken.items():
                self._wake(item_id, version, body)
            self.ledger.settled()

        ticket.when_durable(durable)

    def _wake(self, item_id: str, version: int, body: bytes) -> None:
        """``body`` is the status as committed, at ``version``: pollers behind it get it."""
        keep = []
        for seen, once in self._pollers.get(item_id, []):
            if version > seen:
                once(body)
            else:
                keep.append((seen, once))
        if keep:
            self._pollers[item_id] = keep
        else:
            self._pollers.pop(item_id, None)


def _once(reply: Reply) -> Reply:
    sent = False

    def send(value: Any) -> None:
        nonlocal sent
        if not sent:
            sent = True
            reply(value)

    return send
