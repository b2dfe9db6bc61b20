"""The webhook pipeline of one project, run inside its actor.

verify (the provider's signature over the raw bytes, each mode's secrets; the one that matches
decides ``isTest``) -> normalize -> deduplicate by the provider's event id -> match to a
transaction (echoed tx id, else a provider id linked earlier) -> apply the transition, never
backwards -> store the event with its customerRef -> count it -> reply after the commit.

Refused deliveries are kept (the last ``REJECTED_KEPT``) with time, provider, reason and a hash
of the body, so a merchant can be told exactly why a provider's webhooks fail.
"""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from edge.actors import messages as m
from edge.domain import ids
from edge.domain.events import QUOTA_EXEMPT, EventType
from edge.domain.quota import period_of
from edge.domain.status import Kind, Status, can_transition
from edge.errors import ContractError, InvalidRequest, Unauthorized
from edge.providers.base import MalformedPayload, NormalizedEvent, Provider, SignatureInvalid
from edge.providers.credentials import MODES
from edge.store import keys
from edge.store.codec import pack, unpack
from edge.store.writer import Op

if TYPE_CHECKING:
    from edge.actors.project import ProjectActor, Reply

REJECTED_KEPT = 1000
RECENT_KEPT = 4096  # ids whose commit may still be pending are answered from memory


class WebhookIntake:
    def __init__(self, actor: ProjectActor) -> None:
        self.actor = actor
        self._recent_events: OrderedDict[tuple[str, str], str] = OrderedDict()
        self._recent_refs: OrderedDict[tuple[str, str], str] = OrderedDict()
        self._rejected: list[bytes] | None = None  # keys, oldest first, loaded on first use
        self._quota: dict[tuple[str, str], int] = {}

    # -- entry ------------------------------------------------------------------------

    async def receive(self, msg: m.Webhook, reply: Reply) -> None:
        actor = self.actor
        provider = actor._enabled(msg.provider)
        opened = {mode: actor._opened_credentials(provider, mode) for mode in MODES}
        credentials = {
            mode: plain for mode, plain in opened.items() if provider.is_configured(plain)
        }
        try:
            mode = await provider.verify_webhook(
                msg.headers, msg.body, credentials, time.time(), actor.ctx.http
            )
        except SignatureInvalid as exc:
            self._reject(
                msg,
                "signature_invalid",
                exc.reason,
                reply,
                Unauthorized(
                    "signature_invalid",
                    _SIGNATURE_MESSAGES.get(exc.reason, exc.message),
                    extra={"reason": exc.reason},
                ),
            )
            return
        try:
            event = provider.normalize(msg.body, mode)
        except MalformedPayload as exc:
            self._reject(
                msg,
                "malformed_payload",
                str(exc),
                reply,
                InvalidRequest(
                    "malformed_payload",
                    f"The body verified but is not a readable event: {exc}",
                ),
            )
            return
        self._accept(provider, mode, event, msg.body, reply)

    # -- accepted deliveries -----------------------------------------------------------

    def _accept(
        self, provider: Provider, mode: str, event: NormalizedEvent, body: bytes, reply: Reply
    ) -> None:
        actor = self.actor
        dedup_key = (provider.name, event.provider_event_id)
        first = self._seen_event(*dedup_key)
        if first is not None:
            actor._reply_read(reply, {"received": True, "eventId": first, "duplicate": True})
            return
        now = actor.ctx.clock_ms()
        ops: list[Op] = []
        tx = self._match(provider, mode, event)
        sub = None
        if tx is not None:
            sub = self._apply(provider, event, tx, ops)
        stored = {
            "id": ids.new_evt_id(),
            "projectId": actor.id,
            "provider": provider.name,
            "providerEventId": event.provider_event_id,
            "providerType": event.provider_type,
            "type": str(event.type if tx is not None else EventType.UNMATCHED),
            "txId": tx["id"] if tx else None,
            "subscriptionId": sub["id"] if sub else (tx or {}).get("subscriptionId"),
            "status": _status_after(event, tx, sub),
            "amount": event.amount_minor
            if event.amount_minor is not None
            else (tx or {}).get("amount"),
            "currency": event.currency or (tx or {}).get("currency"),
            "isTest": mode == "test",
            "customerRef": event.customer_ref or (tx or {}).get("customerRef"),
            "metadata": dict(event.metadata or (tx or {}).get("metadata") or {}),
            "occurredAt": event.occurred_at_ms,
            "receivedAt": now,
            "raw": body,
        }
        ops.append(("records", keys.record(actor.id, keys.EVENT, stored["id"]), pack(stored)))
        if tx is not None:
            ops.append(("records", keys.history(actor.id, tx["id"], stored["id"]), b""))
        ops.append(("records", keys.named(actor.id, keys.DEDUP, *dedup_key), stored["id"].encode()))
        _remember(self._recent_events, dedup_key, stored["id"])
        if event.type not in QUOTA_EXEMPT:
            ops.append(self._count(period_of(now), mode))
        answer = {"received": True, "eventId": stored["id"], "duplicate": False}
        actor._commit(ops, reply, answer)

    def _seen_event(self, provider: str, provider_event_id: str) -> str | None:
        return self._recent_or_stored(self._recent_events, keys.DEDUP, provider, provider_event_id)

    def _recent_or_stored(
        self, recent: OrderedDict[tuple[str, str], str], kind: bytes, provider: str, name: str
    ) -> str | None:
        """From memory when written lately (its commit may still be pending), else the store."""
        if (provider, name) in recent:
            return recent[(provider, name)]
        raw = self.actor.ctx.store.get_raw(keys.named(self.actor.id, kind, provider, name))
        return raw.decode() if raw is not None else None

    def _match(
        self, provider: Provider, mode: str, event: NormalizedEvent
    ) -> dict[str, Any] | None:
        actor = self.actor
        tx = actor._tx(event.tx_id) if event.tx_id and ids.is_tx_id(event.tx_id) else None
        if tx is None:
            refs = (*event.refs, event.subscription_ref) if event.subscription_ref else event.refs
            for ref in refs:
                linked = self._linked(provider.name, ref)
                if linked is None:
                    continue
                if linked.startswith("sub_"):
                    sub = actor._subscription(linked)
                    linked = sub["txId"] if sub else None
                tx = actor._tx(linked) if linked else None
                if tx is not None:
                    break
        # An event of another provider or of the other mode never touches a transaction.
        if tx is None or tx["provider"] != provider.name or tx["isTest"] != (mode == "test"):
            return None
        return tx

    def _linked(self, provider: str, ref: str) -> str | None:
        return self._recent_or_stored(self._recent_refs, keys.PROVIDER_REF, provider, ref)

    def _link(self, provider: str, ref: str, item_id: str, ops: list[Op]) -> None:
        if self._linked(provider, ref) == item_id:
            return
        _remember(self._recent_refs, (provider, ref), item_id)
        ops.append(
            (
                "records",
                keys.named(self.actor.id, keys.PROVIDER_REF, provider, ref),
                item_id.encode(),
            )
        )

    def _apply(
        self, provider: Provider, event: NormalizedEvent, tx: dict[str, Any], ops: list[Op]
    ) -> dict[str, Any] | None:
        """Move the transaction and its subscription where the event says, if the tables allow;
        an event that would move a status backwards is stored but changes nothing."""
        actor = self.actor
        for ref in event.link_refs:
            self._link(provider.name, ref, tx["id"], ops)
        tx_changed = False
        target = event.payment_status
        if target is not None and can_transition(Kind.PAYMENT, tx["status"], target):
            actor._move(tx, target)
            tx_changed = True
        sub = actor._subscription(tx["subscriptionId"]) if tx.get("subscriptionId") else None
        if (
            sub is None
            and event.starts_subscription
            and tx["kind"] == Kind.SUBSCRIPTION
            and tx["status"] == Status.SUCCEEDED
        ):
            sub = self._start_subscription(provider, event, tx, ops)
            tx_changed = True
        elif sub is not None:
            sub_changed = False
            sub_target = event.subscription_status
            if sub_target is not None and can_transition(
                Kind.SUBSCRIPTION, sub["status"], sub_target
            ):
                actor._move(sub, sub_target)
                sub_changed = True
            if event.current_period_end_ms and event.current_period_end_ms != sub.get(
                "currentPeriodEnd"
            ):
                sub["currentPeriodEnd"] = event.current_period_end_ms
                sub["updatedAt"] = actor.ctx.clock_ms()
                sub_changed = True
            if event.provider_customer and not sub.get("providerCustomer"):
                sub["providerCustomer"] = event.provider_customer
                sub_changed = True
            if sub_changed:
                ops.extend(actor._sub_ops(sub))
        if tx_changed:
            ops.extend(actor._tx_ops(tx))
        return sub

    def _start_subscription(
        self, provider: Provider, event: NormalizedEvent, tx: dict[str, Any], ops: list[Op]
    ) -> dict[str, Any]:
        actor = self.actor
        now = actor.ctx.clock_ms()
        initial = (
            event.subscription_status
            if event.subscription_status in (Status.TRIALING, Status.ACTIVE)
            else Status.ACTIVE
        )
        sub = {
            "id": ids.new_sub_id(),
            "projectId": actor.id,
            "kind": str(Kind.SUBSCRIPTION),
            "provider": provider.name,
            "productId": tx.get("productId"),
            "txId": tx["id"],
            "status": str(initial),
            "version": 1,
            "amount": tx["amount"],
            "currency": tx["currency"],
            "interval": tx.get("interval"),
            "currentPeriodEnd": event.current_period_end_ms,
            "isTest": tx["isTest"],
            "metadata": dict(tx.get("metadata") or {}),
            "customerRef": tx.get("customerRef"),
            "providerRef": event.subscription_ref,
            "providerCustomer": event.provider_customer,
            "createdAt": now,
            "updatedAt": now,
        }
        tx["subscriptionId"] = sub["id"]
        actor._subs[sub["id"]] = sub
        ops.extend(actor._sub_ops(sub))
        if event.subscription_ref:
            self._link(provider.name, event.subscription_ref, sub["id"], ops)
        return sub

    def _count(self, period: str, mode: str) -> Op:
        count = self.used(period, mode) + 1
        self._quota[(period, mode)] = count
        return (
            "records",
            keys.named(self.actor.id, keys.QUOTA, period, mode),
            pack({"count": count}),
        )

    def used(self, period: str, mode: str) -> int:
        """Events counted in ``period`` for ``mode``, including ones whose commit is pending."""
        key = (period, mode)
        if key not in self._quota:
            raw = self.actor.ctx.store.get_raw(keys.named(self.actor.id, keys.QUOTA, period, mode))
            self._quota[key] = unpack(raw)["count"] if raw else 0
        return self._quota[key]

    # -- refused deliveries ------------------------------------------------------------

    def _reject(
        self, msg: m.Webhook, code: str, reason: str, reply: Reply, failure: ContractError
    ) -> None:
        actor = self.actor
        if self._rejected is None:
            prefix = keys.prefix(actor.id, keys.REJECTED)
            self._rejected = [key for key, _ in actor.ctx.store.scan(prefix)]
        record = {
            "at": actor.ctx.clock_ms(),
            "provider": msg.provider,
            "code": code,
            "reason": reason,
            "bodySha256": hashlib.sha256(msg.body).hexdigest(),
            "bodyBytes": len(msg.body),
        }
        key = keys.record(actor.id, keys.REJECTED, ids.new_ulid())
        ops: list[Op] = [("records", key, pack(record))]
        self._rejected.append(key)
        while len(self._rejected) > REJECTED_KEPT:
            ops.append(("records", self._rejected.pop(0), None))
        actor._commit(ops, reply, failure)


_SIGNATURE_MESSAGES = {
    "missing_header": "The provider's signature header is missing.",
    "malformed_header": "The provider's signature header cannot be read.",
    "timestamp_out_of_tolerance": "The signature's timestamp is more than 300 seconds off.",
    "no_matching_signature": "No signature matches this project's webhook secrets for this body.",
}


def _status_after(
    event: NormalizedEvent, tx: dict[str, Any] | None, sub: dict[str, Any] | None
) -> str | None:
    if tx is None:
        return None
    if sub is not None and event.subscription_status is not None:
        return str(sub["status"])
    return str(tx["status"])


def _remember(cache: OrderedDict[Any, str], key: Any, value: str) -> None:
    cache[key] = value
    cache.move_to_end(key)
    if len(cache) > RECENT_KEPT:
        cache.popitem(last=False)
