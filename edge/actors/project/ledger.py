"""The ledger: one project's state in memory and its way to the store.

Every concern of the project actor (checkout, intake, idempotency, polls, settings ...) reads and
changes the project through this one object, the way trio's two channel endpoints share one
``MemoryChannelState``: the project's configuration with its provider credentials opened, a
bounded cache of recent transactions and subscriptions, the index entries (deduplication,
provider references) whose commit may still be pending, and the tickets of writes on their way.

Guarantees:
- Every change is handed to the store writer at once (``submit``/``commit``); an answer that
  shows a change is sent only once that change is durable (``commit``, ``reply_read``), while
  the actor moves on to its next message during the fsync.
- Reads see the actor's own writes at once, committed or not (read-your-writes).
- After a failed commit the ledger is ``stale``: the actor waits for its later commits to settle
  (``quiesce``) and ``reload``s everything from the store before its next message.
"""

from __future__ import annotations

import contextlib
import logging
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Any

from edge.actors.context import NodeContext
from edge.domain import ids
from edge.domain.changes import ONCE, remember
from edge.domain.events import EventType
from edge.domain.status import ENDED
from edge.domain.urls import redirect_allowed, redirect_rule
from edge.errors import InvalidRequest, NotFound, tx_not_found, unavailable
from edge.providers import credentials as creds
from edge.providers.base import AFTER_THE_END, FollowUp, Provider
from edge.providers.registry import PROVIDERS
from edge.store import keys, notifyq, outbox
from edge.store.codec import pack
from edge.store.engine import Op
from edge.store.writer import Ticket

log = logging.getLogger("edge.actors")

Reply = Callable[[Any], None]
CACHE_SIZE = 512  # transactions, and subscriptions, kept in memory per project
RECENT_KEPT = 4096  # index entries whose commit may still be pending are answered from memory
TOLD_KEPT = 4096  # events read for the change they told (a provider's repeats name them)


class Ledger:
    def __init__(self, ctx: NodeContext, project: dict[str, Any], epoch: int) -> None:
        self.ctx = ctx
        self.project_id: str = project["id"]
        # every write says under which epoch of the project's ownership it was made, so the
        # store refuses it once the project is another node's (cluster mode; one node: nothing)
        self._lease: list[Op] = ctx.ownership.fence(project["id"], epoch)
        self.project = project
        self.config_version = 0  # changes with every configuration change and every reload
        self.stale = False  # a commit failed: reload from the store before the next message
        self._txs: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._subs: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._index: OrderedDict[bytes, str] = OrderedDict()  # "" marks a deleted entry
        self._events: OrderedDict[str, dict[str, Any]] = OrderedDict()  # written lately
        # event id -> its type and the event that told its change (itself, or what it repeats),
        # for events read from the store to answer ``event_type`` and ``teller``: kept as
        # written since (every write passes ``event_ops``), forgotten when pruned
        self._told: dict[str, tuple[str, str]] = {}
        self._credentials: dict[tuple[str, str], dict[str, Any]] = {}
        self._last_ticket: Ticket | None = None
        self._pending: dict[str, Ticket] = {}  # record id -> the ticket that last changed it
        self._submit_watchers: list[Callable[[list[str], Ticket], None]] = []
        self._reload_watchers: list[Callable[[], None]] = []
        self._settled_watchers: list[Callable[[], None]] = []

    def now_ms(self) -> int:
        return self.ctx.clock_ms()

    # -- records --------------------------------------------------------------------------

    async def tx(self, tx_id: str) -> dict[str, Any] | None:
        """The transaction, from memory or the store; None when there is none."""
        if not ids.is_tx_id(tx_id):
            return None
        return await self._cached(self._txs, keys.TRANSACTION, tx_id)

    async def subscription(self, sub_id: str) -> dict[str, Any] | None:
        if not ids.is_sub_id(sub_id):
            return None
        return await self._cached(self._subs, keys.SUBSCRIPTION, sub_id)

    async def record(self, item_id: str) -> dict[str, Any] | None:
        """A transaction or a subscription."""
        return await self.tx(item_id) or await self.subscription(item_id)

    def cached(self, item_id: str) -> dict[str, Any] | None:
        """A transaction or a subscription if it is in memory; None tells nothing."""
        return self._txs.get(item_id) or self._subs.get(item_id)

    async def visible_tx(self, tx_id: str, mode: str | None) -> dict[str, Any]:
        """A transaction the caller may see: a key sees only its own mode's transactions."""
        tx = await self.tx(tx_id)
        if tx is None or (mode is not None and tx["isTest"] != (mode == "test")):
            raise tx_not_found()
        return tx

    async def follow_up_target(
        self, tx_id: str, mode: str, action: str = ""
    ) -> dict[str, Any] | None:
        """What a durable follow-up acts on: a copy of the transaction and its provider's
        opened credentials; None once the checkout has ended (expired, canceled, failed), so
        nothing is captured for it, except a refund or its reading (money paid after the
        checkout ended goes back too).
        ``provider_not_enabled`` while its provider is off."""
        tx = await self.tx(tx_id)
        if tx is None or (tx["status"] in ENDED and action not in AFTER_THE_END):
            return None
        _, credentials = self.configured(tx["provider"], mode)
        return {"tx": dict(tx), "credentials": dict(credentials)}

    def add(self, record: dict[str, Any]) -> None:
        """Keep a new transaction or subscription (its writes are the caller's)."""
        cache = self._subs if record["id"].startswith("sub_") else self._txs
        self._put(cache, record["id"], record)

    async def _cached(
        self, cache: OrderedDict[str, dict[str, Any]], kind: bytes, item_id: str
    ) -> dict[str, Any] | None:
        record = cache.get(item_id)
        if record is None:
            record = await self.ctx.store.get(keys.record(self.project_id, kind, item_id))
            if record is None:
                return None
        self._put(cache, item_id, record)
        return record

    @staticmethod
    def _put(cache: OrderedDict[str, dict[str, Any]], item_id: str, record: dict[str, Any]) -> None:
        cache[item_id] = record
        cache.move_to_end(item_id)
        if len(cache) > CACHE_SIZE:
            cache.popitem(last=False)

    # -- writes -------------------------------------------------------------------------

    def tx_ops(self, tx: dict[str, Any]) -> list[Op]:
        return [("records", keys.record(self.project_id, keys.TRANSACTION, tx["id"]), pack(tx))]

    def sub_ops(self, sub: dict[str, Any]) -> list[Op]:
        return [("records", keys.record(self.project_id, keys.SUBSCRIPTION, sub["id"]), pack(sub))]

    def event(self, tx: dict[str, Any], event_type: EventType, **fields: Any) -> list[Op]:
        """The writes that record ``event_type`` for ``tx`` in the feed and its history. The
        node's own event is the change it names (``edge.domain.changes``): a provider's later
        report of it (Paddle's ``transaction.created`` of the node's checkout) is its repeat.
        The caller writes ``tx``."""
        now = self.now_ms()
        if event_type in ONCE:
            fields.setdefault("id", ids.new_evt_id())
            remember(tx.setdefault("changes", {}), str(event_type), fields["id"])
        event = {
            "id": ids.new_evt_id(),
            "projectId": self.project_id,
            "provider": tx["provider"],
            "providerEventId": None,
            "type": str(event_type),
            "txId": tx["id"],
            "subscriptionId": tx.get("subscriptionId"),
            "status": tx["status"],
            "amount": tx["amount"],
            "currency": tx["currency"],
            "isTest": tx["isTest"],
            "customerRef": tx.get("customerRef"),
            "metadata": dict(tx.get("metadata") or {}),
            "occurredAt": now,
            "receivedAt": now,
            "version": tx["version"],
        }
        event.update(fields)
        return self.new_event_ops(event)

    def new_event_ops(self, event: dict[str, Any]) -> list[Op]:
        """The writes of a new event: stored (``event_ops``) and owed to the project's
        notification endpoints that take it, in the same commit (CONTRACT 4.8)."""
        return self.event_ops(event) + notifyq.owed_ops(self.project, event)

    def event_ops(self, event: dict[str, Any]) -> list[Op]:
        """The writes of a stored event: the feed, and the history of its transaction."""
        ops: list[Op] = [
            ("records", keys.record(self.project_id, keys.EVENT, event["id"]), pack(event))
        ]
        self._events[event["id"]] = event
        self._events.move_to_end(event["id"])
        if len(self._events) > CACHE_SIZE:
            self._events.popitem(last=False)
        if event["id"] in self._told:
            self._told[event["id"]] = _told_of(event)
        if event.get("txId"):
            ops.append(("records", keys.history(self.project_id, event["txId"], event["id"]), b""))
        return ops

    async def stored_event(self, evt_id: str) -> dict[str, Any] | None:
        """A stored event: from memory when written lately (its commit may still be pending),
        else from the store."""
        event = self._events.get(evt_id)
        if event is None:
            event = await self.ctx.store.get(keys.record(self.project_id, keys.EVENT, evt_id))
        return event

    async def event_type(self, evt_id: str) -> str | None:
        """A stored event's type (what a repeat of the change it told is stored as): read once,
        then from memory, however many repeats name it."""
        known = await self._told_by(evt_id)
        return known[0] if known is not None else None

    async def teller(self, evt_id: str) -> str:
        """The event that told the change the stored event ``evt_id`` reports: itself, or the
        one it repeats (read once, as ``event_type``; itself when it is not stored)."""
        known = await self._told_by(evt_id)
        return known[1] if known is not None else evt_id

    async def _told_by(self, evt_id: str) -> tuple[str, str] | None:
        known = self._told.get(evt_id)
        if known is not None:
            return known
        event = await self.stored_event(evt_id)
        if event is None:
            return None
        if len(self._told) >= TOLD_KEPT:
            del self._told[next(iter(self._told))]  # the first read
        known = self._told[evt_id] = _told_of(event)
        return known

    def forget_events(self, evt_ids: Iterable[str]) -> None:
        """Events deleted from the store (retention): no longer answered from memory."""
        for evt_id in evt_ids:
            self._events.pop(evt_id, None)
            self._told.pop(evt_id, None)

    async def latest_event(self, tx_id: str) -> dict[str, Any] | None:
        """The last event of a transaction's history, as committed."""
        prefix = keys.history(self.project_id, tx_id)
        last = await self.ctx.store.scan(prefix, reverse=True, limit=1)
        return await self.stored_event(last[0][0][len(prefix) :].decode()) if last else None

    def follow_up_ops(
        self,
        tx: dict[str, Any],
        provider_name: str,
        mode: str,
        follow_ups: tuple[FollowUp, ...],
    ) -> list[Op]:
        """The outbox entries for ``follow_ups``: written in the same commit as their event."""
        ops: list[Op] = []
        for follow_up in follow_ups:
            ops += outbox.enqueue_ops(
                self.project_id,
                tx["id"],
                provider_name,
                mode,
                follow_up.action,
                follow_up.params,
                self.now_ms(),
            )
        return ops

    # -- index entries (deduplication, provider references, reference codes) -------------

    async def lookup(self, kind: bytes, namespace: str, name: str) -> str | None:
        """The id an index entry names: from memory when written lately (its commit may still
        be pending), else from the store."""
        key = keys.named(self.project_id, kind, namespace, name)
        if key in self._index:
            return self._index[key] or None
        raw = await self.ctx.store.get_raw(key)
        return raw.decode() if raw is not None else None

    def index_op(self, kind: bytes, namespace: str, name: str, value: str) -> Op:
        """The write of an index entry, which ``lookup`` sees from now on."""
        key = keys.named(self.project_id, kind, namespace, name)
        self._index[key] = value
        self._index.move_to_end(key)
        if len(self._index) > RECENT_KEPT:
            self._index.popitem(last=False)
        return ("records", key, value.encode())

    def unindex_op(self, kind: bytes, namespace: str, name: str) -> Op:
        """The delete of an index entry, which ``lookup`` no longer finds from now on."""
        key = keys.named(self.project_id, kind, namespace, name)
        self._index[key] = ""
        self._index.move_to_end(key)
        if len(self._index) > RECENT_KEPT:
            self._index.popitem(last=False)
        return ("records", key, None)

    # -- the project's configuration ------------------------------------------------------

    def provider(self, name: str) -> Provider:
        """The provider, if enabled on this project; else ``provider_not_enabled``."""
        provider = PROVIDERS.get(name)
        config = self.project["providers"].get(name)
        if provider is None or not config or not config.get("enabled"):
            raise NotFound("provider_not_enabled", f"{name} is not enabled on this project.")
        return provider

    def configured(self, name: str, mode: str) -> tuple[Provider, dict[str, Any]]:
        """An enabled provider with its credentials for ``mode``; else ``provider_not_enabled``."""
        provider = self.provider(name)
        credentials = self.credentials(provider, mode)
        if not provider.is_configured(credentials):
            raise NotFound(
                "provider_not_enabled",
                f"{name} has no {mode}-mode credentials on this project.",
            )
        return provider, credentials

    def credentials(self, provider: Provider, mode: str) -> dict[str, Any]:
        """The provider's credentials for ``mode``, opened (secrets in plain text)."""
        key = (provider.name, mode)
        if key not in self._credentials:
            stored = self.project["providers"].get(provider.name, {}).get(mode) or {}
            self._credentials[key] = creds.open_mode(
                provider, self.project_id, mode, stored, self.ctx.sealer
            )
        return self._credentials[key]

    def product(self, product_id: str) -> dict[str, Any]:
        product = self.project["products"].get(product_id)
        if product is None:
            raise NotFound(
                "product_not_found",
                "No product with this id in this project.",
                field="productId",
            )
        return product

    def redirect(self, given: str | None, default: str, field: str) -> str:
        """``given`` if the project allows it as a redirect, ``default`` when not given."""
        if given is None:
            return default
        if not redirect_allowed(given, self.project["allowedOrigins"]):
            raise InvalidRequest("url_not_allowed", redirect_rule(field), field=field)
        return given

    def config_changed(self) -> list[Op]:
        """The write of the changed project record; what was derived from it is dropped."""
        self.project["updatedAt"] = self.now_ms()
        self._credentials.clear()
        self.config_version += 1
        return [("records", keys.project(self.project_id), pack(self.project))]

    # -- committing and replying ----------------------------------------------------------

    def submit(self, ops: list[Op]) -> Ticket:
        """Hand ``ops`` to the writer, remembering which transactions and subscriptions wait on
        this commit (a status read of one of them waits for it, and only for it)."""
        ticket = self.ctx.writer.submit(self._lease + ops if self._lease else ops)
        self._last_ticket = ticket
        touched, owes = _written(ops)
        for item_id in touched:
            self._pending[item_id] = ticket
        for watcher in self._submit_watchers:
            watcher(touched, ticket)
        # the worker of each queue written looks once the entries are durable
        if outbox.DB in owes:
            follow_ups = self.ctx.follow_ups_owed
            ticket.when_durable(lambda error: None if error else follow_ups())
        if notifyq.DB in owes:
            notifications = self.ctx.notifications_owed
            ticket.when_durable(lambda error: None if error else notifications())

        def settled(error: BaseException | None) -> None:
            for item_id in touched:
                if self._pending.get(item_id) is ticket:
                    del self._pending[item_id]
            if error is not None:
                # memory is ahead of the store; later tickets may still land, so the reload
                # waits for them (the actor quiesces first)
                self.stale = True
            self.settled()

        ticket.when_durable(settled)
        return ticket

    def commit(self, ops: list[Op], reply: Reply, answer: Any) -> Ticket:
        """Write ``ops``; once durable, reply with ``answer`` (``unavailable`` if the commit
        failed). The answer is taken now: a later change in memory must not leak into it."""
        ticket = self.submit(ops)
        ticket.when_durable(lambda error: reply(unavailable() if error else answer))
        return ticket

    def reply_read(self, reply: Reply, answer: Any, item_id: str | None = None) -> None:
        """Reply now, unless what the answer shows may still be waiting for its commit: the
        commit of that one record when ``item_id`` is given, else this actor's last one."""
        ticket = self._pending.get(item_id) if item_id is not None else self._last_ticket
        if ticket is None or ticket.done:
            reply(answer)
            return
        ticket.when_durable(lambda error: reply(unavailable() if error else answer))

    def writing(self) -> bool:
        """A write of this project is still waiting for its commit."""
        return self._last_ticket is not None and not self._last_ticket.done

    async def quiesce(self) -> None:
        """Wait until nothing written is still waiting for its commit (failed or not)."""
        if self._last_ticket is not None and not self._last_ticket.done:
            with contextlib.suppress(Exception):
                await self._last_ticket.wait()

    async def reload(self) -> None:
        """Drop everything cached and read it again from the store (after a failed commit,
        once every later commit has settled)."""
        record = await self.ctx.store.get(keys.project(self.project_id))
        if record is not None:
            self.project = record
        self._txs.clear()
        self._subs.clear()
        self._index.clear()
        self._events.clear()
        self._told.clear()
        self._pending.clear()
        self._credentials.clear()
        self.config_version += 1
        self.stale = False
        for watcher in self._reload_watchers:
            watcher()

    # -- watchers -----------------------------------------------------------------------

    def on_submit(self, watcher: Callable[[list[str], Ticket], None]) -> None:
        """Call ``watcher(record ids, ticket)`` for every write handed to the writer."""
        self._submit_watchers.append(watcher)

    def on_reload(self, watcher: Callable[[], None]) -> None:
        """Call ``watcher()`` after a reload: caches derived from the store are dropped."""
        self._reload_watchers.append(watcher)

    def on_settled(self, watcher: Callable[[], None]) -> None:
        """Call ``watcher()`` whenever started work ends (the actor may be idle now)."""
        self._settled_watchers.append(watcher)

    def settled(self) -> None:
        """Some started work (a commit, a provider call, a long poll) has ended."""
        for watcher in self._settled_watchers:
            watcher()


def _written(ops: list[Op]) -> tuple[list[str], set[str]]:
    """Ids of the transactions and subscriptions that ``ops`` write, and the queues they owe
    work (``outbox``, ``notify``: an entry written; one deleted makes nothing due)."""
    ids_written = []
    owes: set[str] = set()
    for db, key, value in ops:
        if db in (outbox.DB, notifyq.DB):
            if value is not None:
                owes.add(db)
        elif db == "records":
            kind = key[keys.PROJECT_ID_LEN : keys.PROJECT_ID_LEN + 1]
            if kind in (keys.TRANSACTION, keys.SUBSCRIPTION):
                ids_written.append(keys.item_id(key))
    return ids_written, owes


def _told_of(event: dict[str, Any]) -> tuple[str, str]:
    """A stored event's type, and the event that told its change."""
    return str(event["type"]), str(event.get("duplicateOf") or event["id"])
