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
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from edge.actors import messages as m
from edge.actors.context import NodeContext
from edge.actors.records import status_record, transaction_view
from edge.actors.views import product_view, project_view, provider_view
from edge.domain import ids
from edge.domain.errors import InvalidInput
from edge.domain.events import EventType
from edge.domain.money import to_wire
from edge.domain.status import Kind, Status, can_transition
from edge.domain.timefmt import iso_ms
from edge.domain.urls import redirect_allowed
from edge.failures import Failure, invalid, unavailable
from edge.providers import credentials as creds
from edge.providers.base import CheckoutRequest, CheckoutResult, Provider
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
        self._credentials: dict[tuple[str, str], dict[str, Any]] = {}
        self._public: dict[tuple[str | None, str], PublicInfo] = {}
        self._last_ticket: Ticket | None = None
        self._checkouts_in_flight = 0
        self._handlers: dict[type, Callable[[Any, Reply], None]] = {
            m.GetStatus: self._get_status,
            m.GetPublicInfo: self._get_public_info,
            m.StartCheckout: self._start_checkout,
            m.CheckoutFinished: self._finish_checkout,
            m.MarkPaid: self._mark_paid,
            m.CancelTx: self._cancel,
            m.GetProject: self._get_project,
            m.PatchProject: self._patch_project,
            m.PutProduct: self._put_product,
            m.DeleteProduct: self._delete_product,
            m.PutProvider: self._put_provider,
            m.CreateKey: self._create_key,
            m.RevokeKey: self._revoke_key,
        }

    @classmethod
    def load(cls, ctx: NodeContext, project_id: str) -> ProjectActor:
        record = ctx.store.get(keys.project(project_id)) if ids.is_project_id(project_id) else None
        if record is None:
            raise Failure(404, "project_not_found", "No project with this id.")
        return cls(ctx, record)

    # -- the Actor protocol -------------------------------------------------------------

    async def handle(self, message: Any, reply: Reply) -> None:
        handler = self._handlers.get(type(message))
        if handler is None:
            raise TypeError(f"project actor got an unknown message {message!r}")
        try:
            handler(message, reply)
        except InvalidInput as exc:
            raise invalid(exc.message, exc.field, exc.code) from None

    async def quiesce(self) -> None:
        if self._last_ticket is not None and not self._last_ticket.done:
            try:
                await self._last_ticket.wait()
            except Exception:
                pass

    def idle(self) -> bool:
        return self._checkouts_in_flight == 0 and (
            self._last_ticket is None or self._last_ticket.done
        )

    # -- writing and replying ---------------------------------------------------------

    def _commit(self, ops: list[Op], reply: Reply, answer: Callable[[], Any]) -> Ticket:
        """Hand ``ops`` to the writer; reply with ``answer()`` once they are durable."""
        ticket = self.ctx.writer.submit(ops)
        self._last_ticket = ticket

        def durable(error: BaseException | None) -> None:
            if error is None:
                reply(answer())
            else:
                self._forget_unsaved_state()
                reply(unavailable())

        ticket.when_durable(durable)
        return ticket

    def _reply_read(self, reply: Reply, answer: Any) -> None:
        """Reply now, unless what the answer shows may still be waiting for its commit."""
        ticket = self._last_ticket
        if ticket is None or ticket.done:
            reply(answer)
            return
        ticket.when_durable(lambda error: reply(unavailable() if error else answer))

    def _forget_unsaved_state(self) -> None:
        """A commit failed: memory may be ahead of the store, so drop everything cached and
        read it again from the store."""
        record = self.ctx.store.get(keys.project(self.id))
        if record is not None:
            self.project = record
        self._txs.clear()
        self._credentials.clear()
        self._public.clear()

    def _config_changed(self) -> list[Op]:
        self.project["updatedAt"] = self.ctx.clock_ms()
        self._credentials.clear()
        self._public.clear()  # the very next public-info request renders afresh
        return [("records", keys.project(self.id), pack(self.project))]

    # -- transactions -----------------------------------------------------------------

    def _tx(self, tx_id: str) -> dict[str, Any] | None:
        tx = self._txs.get(tx_id)
        if tx is None:
            if not ids.is_tx_id(tx_id):
                return None
            tx = self.ctx.store.get(keys.record(self.id, keys.TRANSACTION, tx_id))
            if tx is None:
                return None
        self._txs[tx_id] = tx
        self._txs.move_to_end(tx_id)
        if len(self._txs) > TX_CACHE_SIZE:
            self._txs.popitem(last=False)
        return tx

    def _visible_tx(self, tx_id: str, mode: str | None) -> dict[str, Any]:
        """A transaction the caller may see: a key sees only its own mode's transactions."""
        tx = self._tx(tx_id)
        if tx is None or (mode is not None and tx["isTest"] != (mode == "test")):
            raise Failure(404, "not_found", "No transaction with this id in this project.")
        return tx

    def _tx_ops(self, tx: dict[str, Any]) -> list[Op]:
        return [("records", keys.record(self.id, keys.TRANSACTION, tx["id"]), pack(tx))]

    def _event(self, tx: dict[str, Any], event_type: EventType, **fields: Any) -> tuple[dict, list[Op]]:
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
        ops: list[Op] = [
            ("records", keys.record(self.id, keys.EVENT, event["id"]), pack(event)),
            ("records", keys.history(self.id, tx["id"], event["id"]), b""),
        ]
        return event, ops

    def _move(self, tx: dict[str, Any], target: Status, **changes: Any) -> None:
        tx.update(changes)
        tx["status"] = str(target)
        tx["version"] += 1
        tx["updatedAt"] = self.ctx.clock_ms()

    def _get_status(self, msg: m.GetStatus, reply: Reply) -> None:
        record = self._tx(msg.item_id)
        if record is None:
            raise Failure(404, "not_found", "No transaction or subscription with this id.")
        self._reply_read(reply, status_record(record))

    # -- checkout ---------------------------------------------------------------------

    def _enabled_provider(self, name: str, mode: str) -> tuple[Provider, dict[str, Any]]:
        provider = PROVIDERS.get(name)
        config = self.project["providers"].get(name)
        if provider is None or not config or not config.get("enabled"):
            raise Failure(404, "provider_not_enabled", f"{name} is not enabled on this project.")
        credentials = self._opened_credentials(provider, mode)
        if not provider.is_configured(credentials):
            raise Failure(
                404, "provider_not_enabled", f"{name} has no {mode}-mode credentials on this project."
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
            raise Failure(
                404, "product_not_found", "No product with this id in this project.", field="productId"
            )
        return product

    def _redirect(self, given: str | None, default: str, field: str) -> str:
        if given is None:
            return default
        if not redirect_allowed(given, self.project["allowedOrigins"]):
            raise Failure(
                400,
                "url_not_allowed",
                "Must be https (http only on localhost) on one of the project's allowed origins.",
                field=field,
            )
        return given

    def _start_checkout(self, msg: m.StartCheckout, reply: Reply) -> None:
        provider, credentials = self._enabled_provider(msg.provider, msg.mode)
        product = self._product(msg.product_id)
        if product["kind"] == Kind.SUBSCRIPTION and msg.quantity != 1:
            raise invalid("A subscription is bought one at a time.", "quantity")
        tx_id = msg.tx_id or ids.new_tx_id()
        if self._tx(tx_id) is not None:
            raise Failure(409, "tx_exists", "This transaction id is already used.", field="txId")
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
        ops = self._tx_ops(tx)
        if provider.uses_reference_code:
            tx["reference"] = self._new_reference()
            ops = self._tx_ops(tx)
            ops.append(("records", keys.named(self.id, keys.REFERENCE, "", tx["reference"]), tx_id.encode()))
        _, event_ops = self._event(tx, EventType.CHECKOUT_CREATED)
        ticket = self.ctx.writer.submit(ops + event_ops)
        self._last_ticket = ticket
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
                self._forget_unsaved_state()
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

    async def _call_provider(self, provider: Provider, request: CheckoutRequest, reply: Reply) -> None:
        result: CheckoutResult | Failure
        try:
            result = await provider.create_checkout(request)
        except Failure as failure:
            result = failure
        except Exception as exc:
            log.warning("%s checkout for %s failed: %r", provider.name, request.tx["id"], exc)
            result = Failure(
                502, "provider_error", f"{provider.name} did not create the checkout.", retryable=True
            )
        assert self.ctx.registry is not None
        try:
            await self.ctx.registry.call(
                self.id, m.CheckoutFinished(request.tx["id"], result, reply), internal=True
            )
        except Failure as failure:
            reply(failure)

    def _finish_checkout(self, msg: m.CheckoutFinished, done: Reply) -> None:
        done(None)
        self._checkouts_in_flight = max(0, self._checkouts_in_flight - 1)
        tx = self._tx(msg.tx_id)
        assert tx is not None, "a checkout's transaction is durable before its provider call"
        if isinstance(msg.result, Failure):
            failure = msg.result
            self._move(tx, Status.CANCELED, reason=f"{failure.code}: {failure.message}")
            _, event_ops = self._event(tx, EventType.CHECKOUT_CANCELED)
            self._commit(self._tx_ops(tx) + event_ops, msg.reply, lambda: failure)
            return
        result: CheckoutResult = msg.result
        tx["providerRef"] = result.provider_ref
        tx["checkout"] = result.fields
        tx["expiresAt"] = result.expires_at_ms
        ops = self._tx_ops(tx)
        if result.provider_ref:
            ops.append(
                ("records", keys.named(self.id, keys.PROVIDER_REF, tx["provider"], result.provider_ref), tx["id"].encode())
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
            "expiresAt": iso_ms(result.expires_at_ms) if result.expires_at_ms else None,
        }
        self._commit(ops, msg.reply, lambda: body)

    # -- the merchant's server --------------------------------------------------------

    def _mark_paid(self, msg: m.MarkPaid, reply: Reply) -> None:
        tx = self._visible_tx(msg.tx_id, msg.mode)
        if tx["provider"] != "manual":
            raise Failure(
                409, "not_manual", "Only pay-by-mail transactions are marked paid by hand."
            )
        if not can_transition(Kind.PAYMENT, tx["status"], Status.SUCCEEDED):
            raise Failure(
                422,
                "invalid_transition",
                f"The transaction is {tx['status']}; only a pending one can be marked paid.",
                extra={"status": tx["status"]},
            )
        self._move(tx, Status.SUCCEEDED)
        metadata = dict(tx.get("metadata") or {})
        if msg.note:
            metadata["note"] = msg.note
        _, event_ops = self._event(tx, EventType.MANUAL_MARKED_PAID, metadata=metadata)
        self._commit(self._tx_ops(tx) + event_ops, reply, lambda: transaction_view(tx))

    def _cancel(self, msg: m.CancelTx, reply: Reply) -> None:
        tx = self._visible_tx(msg.tx_id, msg.mode)
        if not can_transition(Kind.PAYMENT, tx["status"], Status.CANCELED):
            raise Failure(
                422,
                "invalid_transition",
                f"The transaction is {tx['status']}; only a pending or processing one can be canceled.",
                extra={"status": tx["status"]},
            )
        self._move(tx, Status.CANCELED, reason="canceled by the merchant")
        _, event_ops = self._event(tx, EventType.CHECKOUT_CANCELED)
        self._commit(self._tx_ops(tx) + event_ops, reply, lambda: transaction_view(tx))

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
                entry["amount"] = to_wire(override.get("amount", product["amount"]), product["currency"])
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
        self.project.update(msg.changes)
        self._commit(self._config_changed(), reply, lambda: project_view(self.project))

    def _put_product(self, msg: m.PutProduct, reply: Reply) -> None:
        product = msg.product
        for name in product.get("overrides", {}):
            if name not in PROVIDERS:
                raise invalid(f"unknown provider {name!r}", f"overrides.{name}")
        self.project["products"][product["id"]] = product
        self._commit(self._config_changed(), reply, lambda: product_view(product))

    def _delete_product(self, msg: m.DeleteProduct, reply: Reply) -> None:
        self._product(msg.product_id)
        del self.project["products"][msg.product_id]
        self._commit(self._config_changed(), reply, lambda: {"deleted": True, "id": msg.product_id})

    def _put_provider(self, msg: m.PutProvider, reply: Reply) -> None:
        provider = PROVIDERS.get(msg.provider)
        if provider is None:
            raise Failure(404, "unknown_provider", f"This node has no provider {msg.provider!r}.")
        body = msg.body
        unknown = set(body) - {"enabled", "label", "order", "test", "live"}
        if unknown:
            raise invalid(f"unknown field {sorted(unknown)[0]!r}", sorted(unknown)[0])
        if not isinstance(body.get("enabled"), bool):
            raise invalid("enabled must be true or false", "enabled")
        label = body.get("label")
        if label is not None and (not isinstance(label, str) or not 1 <= len(label) <= 40):
            raise invalid("label must be 1 to 40 characters", "label")
        order = body.get("order")
        if order is not None and (type(order) is not int or not 1 <= order <= 1000):
            raise invalid("order must be an integer from 1 to 1000", "order")
        stored = dict(self.project["providers"].get(provider.name) or {})
        updated: dict[str, Any] = {"enabled": body["enabled"], "label": label, "order": order}
        for mode in creds.MODES:
            previous = stored.get(mode) or {}
            updated[mode] = (
                creds.merge_mode(provider, self.id, mode, body[mode], previous, self.ctx.sealer)
                if mode in body
                else previous
            )
        self.project["providers"][provider.name] = updated
        self._commit(
            self._config_changed(), reply, lambda: provider_view(provider.name, updated)
        )

    def _create_key(self, msg: m.CreateKey, reply: Reply) -> None:
        if len(self.project["keys"]) >= 50:
            raise Failure(409, "too_many_keys", "A project holds at most 50 keys; revoke one first.")
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
        ops.append(("apikeys", digest, pack({"projectId": self.id, "keyId": key_id, "mode": msg.mode})))
        answer = {"keyId": key_id, "key": key, "last4": key[-4:], "mode": msg.mode, "name": msg.name}
        self._commit(ops, reply, lambda: answer)

    def _revoke_key(self, msg: m.RevokeKey, reply: Reply) -> None:
        meta = self.project["keys"].pop(msg.key_id, None)
        if meta is None:
            raise Failure(404, "not_found", "No key with this id in this project.")
        ops = self._config_changed()
        ops.append(("apikeys", meta["hash"], None))
        self._commit(ops, reply, lambda: {"revoked": True, "keyId": msg.key_id})
