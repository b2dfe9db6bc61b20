"""The project actor: the single owner of one project's state.

It holds the project's configuration (with its provider credentials opened), a small cache of
recent transactions, and the rendered public-info answers. Every change is handed to the store
writer at once and the caller's reply is sent from the commit callback, so the actor moves on to
its next message while the fsync happens (many actors' and many messages' writes share a
commit), yet no answer ever goes out before its data is durable. A read that could see a change
not yet committed waits for that commit too.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import trio

from edge.actors import messages as m
from edge.actors.context import NodeContext
from edge.actors.idempotency import IdempotencyKeys
from edge.actors.intake import WebhookIntake
from edge.actors.rates import ProjectRates
from edge.actors.records import iso_or_none, status_body, transaction_view
from edge.actors.retention import PRUNE_BATCH, PRUNE_EVERY_MS, expired_event_ops
from edge.actors.views import product_view, project_view, provider_view
from edge.domain import ids
from edge.domain.errors import InvalidInput
from edge.domain.events import EventType
from edge.domain.money import to_wire
from edge.domain.quota import over_quota, period_end_ms, period_of
from edge.domain.status import Kind, Status, can_transition
from edge.domain.timefmt import iso_ms
from edge.domain.urls import redirect_allowed
from edge.errors import (
    Conflict,
    ContractError,
    InvalidRequest,
    InvalidTransition,
    NotFound,
    ProviderError,
    QuotaExceeded,
    invalid,
    project_not_found,
    unavailable,
)
from edge.providers import credentials as creds
from edge.providers.base import CheckoutRequest, CheckoutResult, PortalRequest, Provider
from edge.providers.registry import PROVIDERS
from edge.store import keys
from edge.store.codec import pack
from edge.store.writer import Op, Ticket

log = logging.getLogger("edge.actors")

Reply = Callable[[Any], None]
TX_CACHE_SIZE = 512


class PublicInfo:
    __slots__ = ("body", "etag")

    def __init__(self, body: bytes) -> None:
        self.body = body
        self.etag = '"' + hashlib.sha256(body).hexdigest()[:32] + '"'


class ProjectActor:
    def __init__(self, ctx: NodeContext, project: dict[str, Any]) -> None:
        self.ctx = ctx
        self.id: str = project["id"]
        self.project = project
        self._txs: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._subs: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._intake = WebhookIntake(self)
        self._rates = ProjectRates(ctx.settings, project["tier"])
        self._idempotency = IdempotencyKeys(self)
        self._pollers: dict[str, list[tuple[int, Reply]]] = {}
        self._status_bodies: dict[str, tuple[int, int, bytes]] = {}
        self._pruned_at = 0
        self._credentials: dict[tuple[str, str], dict[str, Any]] = {}
        self._public: dict[tuple[str | None, str], PublicInfo] = {}
        self._last_ticket: Ticket | None = None
        self._pending: dict[str, Ticket] = {}  # record id -> the ticket that last changed it
        self._stale = False  # a commit failed: reload from the store before the next message
        self._checkouts_in_flight = 0

    @classmethod
    def load(cls, ctx: NodeContext, project_id: str) -> ProjectActor:
        record = ctx.store.get(keys.project(project_id)) if ids.is_project_id(project_id) else None
        if record is None:
            raise project_not_found()
        return cls(ctx, record)

    # -- the Actor protocol -------------------------------------------------------------

    def handle_now(self, message: Any, reply: Reply) -> bool:
        """Everything but a webhook (whose verification may wait) runs without waiting."""
        if self._stale or type(message) is m.Webhook:
            return False
        self._dispatch(message, reply)
        return True

    async def handle(self, message: Any, reply: Reply) -> None:
        if self._stale:
            await self.quiesce()
            self._reload()
        if type(message) is not m.Webhook:
            self._dispatch(message, reply)
            return
        admitted = self._admit(message, reply)
        if admitted is not None:
            try:
                await self._intake.receive(message, admitted)
            except ContractError as failure:
                admitted(failure)

    def _dispatch(self, message: Any, reply: Reply) -> None:
        handler = _HANDLERS.get(type(message))
        if handler is None:
            raise TypeError(f"project actor got an unknown message {message!r}")
        admitted = self._admit(message, reply)
        if admitted is None:
            return
        try:
            handler(self, message, admitted)
        except InvalidInput as exc:
            admitted(invalid(exc.message, exc.field, exc.code))
        except ContractError as failure:
            admitted(failure)

    def _admit(self, message: Any, reply: Reply) -> Reply | None:
        """Charge the request's rate bucket: the reply to use (carrying its RateLimit-*, errors
        included), or None when refused (the 429 is already sent)."""
        self._prune_now_and_then()
        charge = getattr(message, "charge", None)
        if charge is None:
            return reply
        try:
            headers = self._rates.take(charge.bucket, charge.client)
        except ContractError as failure:
            reply(failure)
            return None
        return _with_headers(reply, headers)

    async def quiesce(self) -> None:
        if self._last_ticket is not None and not self._last_ticket.done:
            try:
                await self._last_ticket.wait()
            except Exception:
                pass

    def release_waiters(self) -> None:
        for item_id in list(self._pollers):
            record = self._record(item_id)
            for _, once in self._pollers.pop(item_id):
                if record is not None:
                    self._reply_read(once, self._status_body(record), item_id)

    def idle(self) -> bool:
        return (
            self._checkouts_in_flight == 0
            and not self._pollers
            and (self._last_ticket is None or self._last_ticket.done)
        )

    def _prune_now_and_then(self) -> None:
        now = self.ctx.clock_ms()
        if now - self._pruned_at < PRUNE_EVERY_MS:
            return
        self._pruned_at = now
        ops = expired_event_ops(self.ctx.store, self.id, now)
        if not ops:
            return
        log.info("project %s: pruning %d expired event records", self.id, len(ops))
        ticket = self._submit(ops)
        if len(ops) >= PRUNE_BATCH:
            # more have expired than one batch: go on once this one is gone from the store
            ticket.when_durable(lambda _error: setattr(self, "_pruned_at", 0))

    # -- writing and replying ---------------------------------------------------------

    def _submit(self, ops: list[Op]) -> Ticket:
        """Hand ``ops`` to the writer, remembering which transactions and subscriptions wait on
        this commit (a status read of one of them waits for it, and only for it)."""
        ticket = self.ctx.writer.submit(ops)
        self._last_ticket = ticket
        touched = _records_in(ops)
        for item_id in touched:
            self._pending[item_id] = ticket

        def settled(error: BaseException | None) -> None:
            for item_id in touched:
                if self._pending.get(item_id) is ticket:
                    del self._pending[item_id]
            if error is not None:
                # memory is ahead of the store; later tickets may still land, so the reload
                # waits for them (handle() quiesces first)
                self._stale = True

        ticket.when_durable(settled)
        return ticket

    def _commit(self, ops: list[Op], reply: Reply, answer: Any) -> Ticket:
        """Write ``ops``; once durable, reply with ``answer`` and wake long polls on what they
        changed. Answers are taken now: a later change in memory must not leak into them."""
        woken = {
            item_id: (record["version"], self._status_body(record))
            for item_id in _records_in(ops)
            if item_id in self._pollers and (record := self._record(item_id)) is not None
        }
        ticket = self._submit(ops)

        def durable(error: BaseException | None) -> None:
            if error is not None:
                reply(unavailable())
                return
            reply(answer)
            for item_id, (version, body) in woken.items():
                self._wake_pollers(item_id, version, body)

        ticket.when_durable(durable)
        return ticket

    def _reply_read(self, reply: Reply, answer: Any, item_id: str | None = None) -> None:
        """Reply now, unless what the answer shows may still be waiting for its commit: the
        commit of that one record when ``item_id`` is given, else this actor's last one."""
        ticket = self._pending.get(item_id) if item_id is not None else self._last_ticket
        if ticket is None or ticket.done:
            reply(answer)
            return
        ticket.when_durable(lambda error: reply(unavailable() if error else answer))

    def _reload(self) -> None:
        """Drop everything cached and read it again from the store (after a failed commit,
        once every later commit of this actor has settled)."""
        record = self.ctx.store.get(keys.project(self.id))
        if record is not None:
            self.project = record
        self._txs.clear()
        self._subs.clear()
        self._pending.clear()
        self._intake = WebhookIntake(self)
        self._rates = ProjectRates(
            self.ctx.settings, self.project["tier"]
        )  # a tier change may not have landed
        self._credentials.clear()
        self._public.clear()
        self._stale = False

    def _config_changed(self) -> list[Op]:
        self.project["updatedAt"] = self.ctx.clock_ms()
        self._credentials.clear()
        self._public.clear()  # the very next public-info request renders afresh
        return [("records", keys.project(self.id), pack(self.project))]

    # -- transactions -----------------------------------------------------------------

    def _tx(self, tx_id: str) -> dict[str, Any] | None:
        if not ids.is_tx_id(tx_id):
            return None
        return self._cached(self._txs, keys.TRANSACTION, tx_id)

    def _subscription(self, sub_id: str) -> dict[str, Any] | None:
        if not ids.is_sub_id(sub_id):
            return None
        return self._cached(self._subs, keys.SUBSCRIPTION, sub_id)

    def _record(self, item_id: str) -> dict[str, Any] | None:
        return self._tx(item_id) or self._subscription(item_id)

    def _cached(
        self, cache: OrderedDict[str, dict[str, Any]], kind: bytes, item_id: str
    ) -> dict[str, Any] | None:
        record = cache.get(item_id)
        if record is None:
            record = self.ctx.store.get(keys.record(self.id, kind, item_id))
            if record is None:
                return None
        cache[item_id] = record
        cache.move_to_end(item_id)
        if len(cache) > TX_CACHE_SIZE:
            cache.popitem(last=False)
        return record

    def _visible_tx(self, tx_id: str, mode: str | None) -> dict[str, Any]:
        """A transaction the caller may see: a key sees only its own mode's transactions."""
        tx = self._tx(tx_id)
        if tx is None or (mode is not None and tx["isTest"] != (mode == "test")):
            raise NotFound("not_found", "No transaction with this id in this project.")
        return tx

    def _tx_ops(self, tx: dict[str, Any]) -> list[Op]:
        return [("records", keys.record(self.id, keys.TRANSACTION, tx["id"]), pack(tx))]

    def _sub_ops(self, sub: dict[str, Any]) -> list[Op]:
        return [("records", keys.record(self.id, keys.SUBSCRIPTION, sub["id"]), pack(sub))]

    def _event(self, tx: dict[str, Any], event_type: EventType, **fields: Any) -> list[Op]:
        """The writes that record ``event_type`` for ``tx`` in the feed and its history."""
        now = self.ctx.clock_ms()
        event = {
            "id": ids.new_evt_id(),
            "projectId": self.id,
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
        }
        event.update(fields)
        return [
            ("records", keys.record(self.id, keys.EVENT, event["id"]), pack(event)),
            ("records", keys.history(self.id, tx["id"], event["id"]), b""),
        ]

    def _move(self, tx: dict[str, Any], target: Status, **changes: Any) -> None:
        tx.update(changes)
        tx["status"] = str(target)
        tx["version"] += 1
        tx["updatedAt"] = self.ctx.clock_ms()

    def _get_status(self, msg: m.GetStatus, reply: Reply) -> None:
        record = self._record(msg.item_id)
        if record is None:
            raise NotFound("not_found", "No transaction or subscription with this id.")
        registry = self.ctx.registry
        stopping = registry is not None and registry.stopping
        if msg.wait_s <= 0 or msg.version is None or record["version"] > msg.version or stopping:
            self._reply_read(reply, self._status_body(record), msg.item_id)
            return
        # Long poll: answered by the commit that changes the record, or by the timer.
        once = _once(reply)
        self._pollers.setdefault(msg.item_id, []).append((msg.version, once))
        self.ctx.nursery.start_soon(self._poll_timeout, msg.item_id, once, msg.wait_s)

    async def _poll_timeout(self, item_id: str, once: Reply, wait_s: float) -> None:
        await trio.sleep(wait_s)
        waiting = [(v, r) for v, r in self._pollers.get(item_id, []) if r is not once]
        if waiting:
            self._pollers[item_id] = waiting
        else:
            self._pollers.pop(item_id, None)
        record = self._record(item_id)
        if record is not None:
            self._reply_read(once, self._status_body(record), item_id)

    def _status_body(self, record: dict[str, Any]) -> bytes:
        if len(self._status_bodies) > TX_CACHE_SIZE:
            self._status_bodies.clear()
        return status_body(record, self._status_bodies)

    def _wake_pollers(self, item_id: str, version: int, body: bytes) -> None:
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

    # -- checkout ---------------------------------------------------------------------

    def _enabled(self, name: str) -> Provider:
        provider = PROVIDERS.get(name)
        config = self.project["providers"].get(name)
        if provider is None or not config or not config.get("enabled"):
            raise NotFound("provider_not_enabled", f"{name} is not enabled on this project.")
        return provider

    def _enabled_provider(self, name: str, mode: str) -> tuple[Provider, dict[str, Any]]:
        provider = self._enabled(name)
        credentials = self._opened_credentials(provider, mode)
        if not provider.is_configured(credentials):
            raise NotFound(
                "provider_not_enabled",
                f"{name} has no {mode}-mode credentials on this project.",
            )
        return provider, credentials

    def _opened_credentials(self, provider: Provider, mode: str) -> dict[str, Any]:
        key = (provider.name, mode)
        if key not in self._credentials:
            stored = self.project["providers"].get(provider.name, {}).get(mode) or {}
            self._credentials[key] = creds.open_mode(
                provider, self.id, mode, stored, self.ctx.sealer
            )
        return self._credentials[key]

    def _product(self, product_id: str) -> dict[str, Any]:
        product = self.project["products"].get(product_id)
        if product is None:
            raise NotFound(
                "product_not_found",
                "No product with this id in this project.",
                field="productId",
            )
        return product

    def _redirect(self, given: str | None, default: str, field: str) -> str:
        if given is None:
            return default
        if not redirect_allowed(given, self.project["allowedOrigins"]):
            raise InvalidRequest(
                "url_not_allowed",
                "Must be https (http only on localhost) on one of the project's allowed origins.",
                field=field,
            )
        return given

    def _start_checkout(self, msg: m.StartCheckout, reply: Reply) -> None:
        if msg.idempotency_key is not None and self._idempotency.answer_known(msg, reply):
            return
        if msg.mode == "live" and self._over_quota("live"):
            raise QuotaExceeded(
                "quota_exceeded",
                "This project has used its live events for the month; upgrade its tier or wait "
                "for the next period.",
                extra={"resetsAt": iso_ms(period_end_ms(period_of(self.ctx.clock_ms())))},
            )
        provider, credentials = self._enabled_provider(msg.provider, msg.mode)
        product = self._product(msg.product_id)
        if product["kind"] == Kind.SUBSCRIPTION and msg.quantity != 1:
            raise invalid("A subscription is bought one at a time.", "quantity")
        tx_id = msg.tx_id or ids.new_tx_id()
        if self._tx(tx_id) is not None:
            raise Conflict("tx_exists", "This transaction id is already used.", field="txId")
        success_url = self._redirect(msg.success_url, self.project["successUrl"], "successUrl")
        cancel_url = self._redirect(msg.cancel_url, self.project["cancelUrl"], "cancelUrl")
        override = product.get("overrides", {}).get(provider.name, {})
        now = self.ctx.clock_ms()
        tx: dict[str, Any] = {
            "id": tx_id,
            "projectId": self.id,
            "kind": product["kind"],
            "provider": provider.name,
            "productId": product["id"],
            "quantity": msg.quantity,
            "status": str(Status.PENDING),
            "version": 1,
            "amount": override.get("amount", product["amount"]) * msg.quantity,
            "currency": product["currency"],
            "interval": product.get("interval"),
            "isTest": msg.mode == "test",
            "metadata": msg.metadata,
            "customerRef": msg.metadata.get("customerRef"),
            "reference": None,
            "providerRef": None,
            "subscriptionId": None,
            "reason": None,
            "createdAt": now,
            "updatedAt": now,
        }
        ops: list[Op] = []
        if provider.uses_reference_code:
            tx["reference"] = self._new_reference()
            ops.append(
                (
                    "records",
                    keys.named(self.id, keys.REFERENCE, "", tx["reference"]),
                    tx_id.encode(),
                )
            )
        if msg.idempotency_key is not None:
            tx["idempotencyKey"] = self._idempotency.begin(msg, reply)
            tx["idempotencyBodyHash"] = msg.body_hash
            reply = self._idempotency.fan_out(tx["idempotencyKey"])
        event_ops = self._event(tx, EventType.CHECKOUT_CREATED)
        ops += self._tx_ops(tx)
        # tx ids are unique across projects: this lets the operator's tools find the project
        ops.append(("meta", keys.tx_owner(tx_id), self.id.encode()))
        ticket = self._submit(ops + event_ops)
        self._txs[tx_id] = tx
        self._checkouts_in_flight += 1
        request = CheckoutRequest(
            tx=dict(tx),
            product=product,
            credentials=credentials,
            success_url=success_url,
            cancel_url=cancel_url,
            http=self.ctx.http,
        )

        def stored(error: BaseException | None) -> None:
            if error is not None:
                self._checkouts_in_flight -= 1
                reply(unavailable())
                return
            # The provider is called only once the pending transaction is durable, and off the
            # actor, so a slow provider never holds up this project's other requests.
            self.ctx.nursery.start_soon(self._call_provider, provider, request, reply)

        ticket.when_durable(stored)

    def _new_reference(self) -> str:
        while True:
            code = ids.new_reference_code()
            if self.ctx.store.get_raw(keys.named(self.id, keys.REFERENCE, "", code)) is None:
                return code

    async def _call_provider(
        self, provider: Provider, request: CheckoutRequest, reply: Reply
    ) -> None:
        result: CheckoutResult | ContractError
        try:
            result = await provider.create_checkout(request)
        except ContractError as failure:
            result = failure
        except Exception as exc:
            log.warning("%s checkout for %s failed: %r", provider.name, request.tx["id"], exc)
            result = ProviderError(
                "provider_error",
                f"{provider.name} did not create the checkout.",
                retryable=True,
            )
        assert self.ctx.registry is not None
        try:
            # No timeout: dropping this message would leave the transaction pending for ever.
            await self.ctx.registry.call(
                self.id,
                m.CheckoutFinished(request.tx["id"], result, reply),
                math.inf,
                internal=True,
            )
        except ContractError as failure:
            reply(failure)

    def _finish_checkout(self, msg: m.CheckoutFinished, done: Reply) -> None:
        done(None)
        self._checkouts_in_flight = max(0, self._checkouts_in_flight - 1)
        tx = self._tx(msg.tx_id)
        assert tx is not None, "a checkout's transaction is durable before its provider call"
        if isinstance(msg.result, ContractError):
            failure = msg.result
            ops = self._idempotency.remember(tx, failure)
            # the merchant may have canceled meanwhile: never move a status it cannot reach
            if can_transition(Kind.PAYMENT, tx["status"], Status.CANCELED):
                self._move(tx, Status.CANCELED, reason=f"{failure.code}: {failure.message}")
                ops += self._tx_ops(tx) + self._event(tx, EventType.CHECKOUT_CANCELED)
            self._commit(ops, msg.reply, failure)
            return
        result: CheckoutResult = msg.result
        tx["providerRef"] = result.provider_ref
        tx["checkout"] = result.fields
        tx["expiresAt"] = result.expires_at_ms
        ops = self._tx_ops(tx)
        if result.provider_ref:
            ops.append(
                (
                    "records",
                    keys.named(self.id, keys.PROVIDER_REF, tx["provider"], result.provider_ref),
                    tx["id"].encode(),
                )
            )
        provider = PROVIDERS[tx["provider"]]
        body = {
            "txId": tx["id"],
            "provider": provider.name,
            "kind": provider.kind,
            "type": provider.checkout_type,
            **result.fields,
            "amount": to_wire(tx["amount"], tx["currency"]),
            "currency": tx["currency"],
            "isTest": tx["isTest"],
            "expiresAt": iso_or_none(result.expires_at_ms),
        }
        ops += self._idempotency.remember(tx, body)
        self._commit(ops, msg.reply, body)

    # -- the merchant's server --------------------------------------------------------

    def _mark_paid(self, msg: m.MarkPaid, reply: Reply) -> None:
        tx = self._visible_tx(msg.tx_id, msg.mode)
        if tx["provider"] != "manual":
            raise Conflict("not_manual", "Only pay-by-mail transactions are marked paid by hand.")
        _require_transition(tx, Status.SUCCEEDED, "only a pending one can be marked paid")
        self._move(tx, Status.SUCCEEDED)
        metadata = dict(tx.get("metadata") or {})
        if msg.note:
            metadata["note"] = msg.note
        event_ops = self._event(tx, EventType.MANUAL_MARKED_PAID, metadata=metadata)
        self._commit(self._tx_ops(tx) + event_ops, reply, transaction_view(tx))

    def _cancel(self, msg: m.CancelTx, reply: Reply) -> None:
        tx = self._visible_tx(msg.tx_id, msg.mode)
        _require_transition(tx, Status.CANCELED, "only a pending or processing one can be canceled")
        self._move(tx, Status.CANCELED, reason="canceled by the merchant")
        event_ops = self._event(tx, EventType.CHECKOUT_CANCELED)
        self._commit(self._tx_ops(tx) + event_ops, reply, transaction_view(tx))

    def _portal_url(self, msg: m.PortalUrl, reply: Reply) -> None:
        sub = self._subscription(msg.subscription_id)
        if sub is None or (msg.mode is not None and sub["isTest"] != (msg.mode == "test")):
            raise NotFound("not_found", "No subscription with this id in this project.")
        mode = "test" if sub["isTest"] else "live"
        provider, credentials = self._enabled_provider(sub["provider"], mode)
        return_url = self._redirect(msg.return_url, self.project["successUrl"], "returnUrl")
        request = PortalRequest(
            subscription=dict(sub),
            credentials=credentials,
            return_url=return_url,
            http=self.ctx.http,
        )
        # Off the actor: a provider call never holds up this project's other requests.
        self.ctx.nursery.start_soon(self._call_portal, provider, request, reply)

    async def _call_portal(self, provider: Provider, request: PortalRequest, reply: Reply) -> None:
        try:
            result = await provider.portal_url(request)
        except ContractError as failure:
            reply(failure)
            return
        except Exception as exc:
            log.warning("%s portal session failed: %r", provider.name, exc)
            reply(
                ProviderError(
                    "provider_error",
                    f"{provider.name} did not create a portal session.",
                    retryable=True,
                )
            )
            return
        reply(
            {
                "url": result.url,
                "provider": provider.name,
                "expiresAt": iso_or_none(result.expires_at_ms),
            }
        )

    def _trigger_material(self, msg: m.TriggerMaterial, reply: Reply) -> None:
        tx = self._tx(msg.tx_id)
        if tx is None:
            raise NotFound("not_found", "No transaction with this id in this project.")
        if not tx["isTest"]:
            raise Conflict(
                "live_transaction",
                "Simulated events are sent for test-mode transactions only.",
            )
        if tx["provider"] != msg.provider:
            raise Conflict("provider_mismatch", f"This transaction was paid with {tx['provider']}.")
        _, credentials = self._enabled_provider(msg.provider, "test")
        sub = self._subscription(tx["subscriptionId"]) if tx.get("subscriptionId") else None
        self._reply_read(
            reply,
            {
                "tx": dict(tx),
                "subscription": dict(sub) if sub else None,
                "credentials": dict(credentials),
            },
        )

    # -- quota ------------------------------------------------------------------------

    def _over_quota(self, mode: str) -> bool:
        tier = self.ctx.settings.tiers[self.project["tier"]]
        used = self._intake.used(period_of(self.ctx.clock_ms()), mode)
        return over_quota(tier, mode == "test", used)

    def _get_usage(self, msg: m.GetUsage, reply: Reply) -> None:
        tier = self.ctx.settings.tiers[self.project["tier"]]
        period = period_of(self.ctx.clock_ms())
        usage: dict[str, Any] = {
            "period": period,
            "tier": tier.name,
            "resetsAt": iso_ms(period_end_ms(period)),
        }
        for mode, allowance in (("live", tier.live_events), ("test", tier.test_events)):
            used = self._intake.used(period, mode)
            usage[mode] = {
                "used": used,
                "limit": allowance,
                "left": max(0, allowance - used),
                "overQuota": over_quota(tier, mode == "test", used),
            }
        self._reply_read(reply, usage)

    # -- public info ------------------------------------------------------------------

    def _get_public_info(self, msg: m.GetPublicInfo, reply: Reply) -> None:
        key = (msg.product_id, msg.mode)
        info = self._public.get(key)
        if info is None:
            info = PublicInfo(self._render_public_info(msg.product_id, msg.mode))
            self._public[key] = info
        self._reply_read(reply, info)

    def _render_public_info(self, product_id: str | None, mode: str) -> bytes:
        product = self._product(product_id) if product_id is not None else None
        entries = []
        for name, config in self.project["providers"].items():
            provider = PROVIDERS.get(name)
            if provider is None or not config.get("enabled"):
                continue
            credentials = self._opened_credentials(provider, mode)
            if not provider.is_configured(credentials):
                continue
            override = (product or {}).get("overrides", {}).get(name, {})
            entry: dict[str, Any] = {
                "provider": name,
                "kind": provider.kind,
                "label": override.get("label") or config.get("label") or provider.default_label,
                "icon": f"{self.ctx.public_url}/static/icons/{provider.icon}",
                "publishableKey": provider.publishable_key(credentials),
                "mailingAddress": provider.mailing_address(credentials),
            }
            if product is not None:
                entry["amount"] = to_wire(
                    override.get("amount", product["amount"]), product["currency"]
                )
                entry["currency"] = product["currency"]
            entry["order"] = override.get("order") or config.get("order") or 100
            entries.append(entry)
        entries.sort(key=lambda e: (e["order"], e["provider"]))
        body = {
            "projectId": self.id,
            "mode": mode,
            "product": product_view(product, public=True) if product else None,
            "providers": entries,
        }
        return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()

    # -- management -------------------------------------------------------------------

    def _get_project(self, msg: m.GetProject, reply: Reply) -> None:
        self._reply_read(reply, project_view(self.project))

    def _patch_project(self, msg: m.PatchProject, reply: Reply) -> None:
        if msg.changes.get("tier", self.project["tier"]) != self.project["tier"]:
            self._rates = ProjectRates(self.ctx.settings, msg.changes["tier"])
        self.project.update(msg.changes)
        self._commit(self._config_changed(), reply, project_view(self.project))

    def _put_product(self, msg: m.PutProduct, reply: Reply) -> None:
        product = msg.product
        for name in product.get("overrides", {}):
            if name not in PROVIDERS:
                raise invalid(f"unknown provider {name!r}", f"overrides.{name}")
        self.project["products"][product["id"]] = product
        self._commit(self._config_changed(), reply, product_view(product))

    def _delete_product(self, msg: m.DeleteProduct, reply: Reply) -> None:
        self._product(msg.product_id)
        del self.project["products"][msg.product_id]
        self._commit(self._config_changed(), reply, {"deleted": True, "id": msg.product_id})

    def _put_provider(self, msg: m.PutProvider, reply: Reply) -> None:
        provider = PROVIDERS.get(msg.provider)
        if provider is None:
            raise NotFound("unknown_provider", f"This node has no provider {msg.provider!r}.")
        body = msg.body  # checked by edge.http.bodies.provider_settings
        stored = dict(self.project["providers"].get(provider.name) or {})
        updated: dict[str, Any] = {
            "enabled": body["enabled"],
            "label": body["label"],
            "order": body["order"],
        }
        for mode in creds.MODES:
            previous = stored.get(mode) or {}
            updated[mode] = (
                creds.merge_mode(provider, self.id, mode, body[mode], previous, self.ctx.sealer)
                if mode in body
                else previous
            )
        self.project["providers"][provider.name] = updated
        self._commit(self._config_changed(), reply, provider_view(provider.name, updated))

    def _create_key(self, msg: m.CreateKey, reply: Reply) -> None:
        if len(self.project["keys"]) >= 50:
            raise Conflict("too_many_keys", "A project holds at most 50 keys; revoke one first.")
        key = ids.new_api_key(msg.mode)
        key_id = ids.new_key_id()
        digest = ids.hash_api_key(key)
        meta = {
            "keyId": key_id,
            "mode": msg.mode,
            "name": msg.name,
            "last4": key[-4:],
            "hash": digest,
            "createdAt": self.ctx.clock_ms(),
        }
        self.project["keys"][key_id] = meta
        ops = self._config_changed()
        ops.append(
            ("apikeys", digest, pack({"projectId": self.id, "keyId": key_id, "mode": msg.mode}))
        )
        answer = {
            "keyId": key_id,
            "key": key,
            "last4": key[-4:],
            "mode": msg.mode,
            "name": msg.name,
        }
        self._commit(ops, reply, answer)

    def _revoke_key(self, msg: m.RevokeKey, reply: Reply) -> None:
        meta = self.project["keys"].pop(msg.key_id, None)
        if meta is None:
            raise NotFound("not_found", "No key with this id in this project.")
        ops = self._config_changed()
        ops.append(("apikeys", meta["hash"], None))
        forget = self.ctx.keys.forget
        forget(meta["hash"])
        ticket = self._commit(ops, reply, {"revoked": True, "keyId": msg.key_id})
        # A lookup during the fsync still finds the key in the store and caches it again: forget
        # it once more at the commit, before anything else runs.
        ticket.when_durable(lambda _error: forget(meta["hash"]))


def _require_transition(tx: dict[str, Any], target: Status, rule: str) -> None:
    if not can_transition(Kind.PAYMENT, tx["status"], target):
        raise InvalidTransition(
            "invalid_transition",
            f"The transaction is {tx['status']}; {rule}.",
            extra={"status": tx["status"]},
        )


def _with_headers(reply: Reply, headers: dict[str, str]) -> Reply:
    """Send ``headers`` (RateLimit-*) with whatever the reply turns out to be."""

    def send(value: Any) -> None:
        if isinstance(value, ContractError):
            reply(value.with_headers(headers))
        elif isinstance(value, m.Answer):
            reply(m.Answer(value.value, {**headers, **value.headers}))
        else:
            reply(m.Answer(value, headers))

    return send


def _once(reply: Reply) -> Reply:
    sent = False

    def send(value: Any) -> None:
        nonlocal sent
        if not sent:
            sent = True
            reply(value)

    return send


def _records_in(ops: list[Op]) -> list[str]:
    """Ids of the transactions and subscriptions that ``ops`` write."""
    ids_written = []
    for db, key, _ in ops:
        kind = key[keys.PROJECT_ID_LEN : keys.PROJECT_ID_LEN + 1]
        if db == "records" and kind in (keys.TRANSACTION, keys.SUBSCRIPTION):
            ids_written.append(keys.item_id(key))
    return ids_written


# One table for every actor: message type -> handler.
_HANDLERS: dict[type, Callable[[ProjectActor, Any, Reply], None]] = {
    m.GetStatus: ProjectActor._get_status,
    m.GetPublicInfo: ProjectActor._get_public_info,
    m.StartCheckout: ProjectActor._start_checkout,
    m.CheckoutFinished: ProjectActor._finish_checkout,
    m.MarkPaid: ProjectActor._mark_paid,
    m.CancelTx: ProjectActor._cancel,
    m.GetProject: ProjectActor._get_project,
    m.PatchProject: ProjectActor._patch_project,
    m.PutProduct: ProjectActor._put_product,
    m.DeleteProduct: ProjectActor._delete_product,
    m.PutProvider: ProjectActor._put_provider,
    m.CreateKey: ProjectActor._create_key,
    m.RevokeKey: ProjectActor._revoke_key,
    m.PortalUrl: ProjectActor._portal_url,
    m.TriggerMaterial: ProjectActor._trigger_material,
    m.GetUsage: ProjectActor._get_usage,
}
