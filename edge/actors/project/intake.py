"""The webhook pipeline of one project.

verify (the provider's signature over the raw bytes, each mode's secrets; the one that matches
decides ``isTest``) -> normalize -> deduplicate by each of the event's ``dedup_ids`` -> match to
a transaction (echoed tx id, else a provider id linked earlier) -> apply the transition, never
backwards -> store the event with its customerRef and its durable follow-ups -> count it ->
reply after the commit.

Verification runs off the actor, like a checkout's provider call (a provider may fetch its
signing certificate): the actor hands out the opened credentials at once and goes on with its
other messages; the verdict comes back as a message (``WebhookVerified`` or ``WebhookRefused``)
that the actor applies without waiting.

Refused deliveries are kept (the last ``REJECTED_KEPT``) with time, provider, reason and a hash
of the body, so a merchant can be told exactly why a provider's webhooks fail.
"""

from __future__ import annotations

import hashlib
import logging
import time
from typing import Any

from edge.actors import messages as m
from edge.actors.project.ledger import Ledger, Reply
from edge.actors.project.quota import Quota
from edge.actors.registry import ActorRef
from edge.domain import ids
from edge.domain.events import QUOTA_EXEMPT, EventType
from edge.domain.inputs import first_flaw
from edge.domain.money import MAX_MINOR
from edge.domain.quota import period_of
from edge.domain.status import Kind, Status, can_transition
from edge.errors import ContractError, Internal, InvalidRequest, Unauthorized
from edge.providers.base import MalformedPayload, NormalizedEvent, Provider, SignatureInvalid
from edge.providers.credentials import MODES
from edge.store import keys
from edge.store.codec import pack
from edge.store.writer import Op

log = logging.getLogger("edge.actors")

REJECTED_KEPT = 1000


class WebhookIntake:
    def __init__(self, ledger: Ledger, quota: Quota, ref: ActorRef) -> None:
        self.ledger = ledger
        self.quota = quota
        self.ref = ref
        self.verifying = 0  # deliveries whose signature is being checked
        self._rejected: list[bytes] | None = None  # keys, oldest first, loaded on first use
        ledger.on_reload(self._forget_rejected)

    # -- entry ------------------------------------------------------------------------

    def receive(self, msg: m.Webhook, reply: Reply) -> None:
        """Hand the delivery, with this project's opened credentials, to a verifying task."""
        provider = self.ledger.provider(msg.provider)
        opened = {mode: self.ledger.credentials(provider, mode) for mode in MODES}
        credentials = {
            mode: plain for mode, plain in opened.items() if provider.is_configured(plain)
        }
        self.verifying += 1
        self.ledger.ctx.nursery.start_soon(self._verify, provider, credentials, msg, reply)

    async def _verify(
        self, provider: Provider, credentials: dict[str, Any], msg: m.Webhook, reply: Reply
    ) -> None:
        try:
            verdict: m.WebhookVerified | m.WebhookRefused
            try:
                mode = await provider.verify_webhook(
                    msg.headers, msg.body, credentials, time.time(), self.ledger.ctx.http
                )
            except SignatureInvalid as exc:
                verdict = m.WebhookRefused(msg.provider, exc.reason, exc.message, msg.body, reply)
            else:
                verdict = m.WebhookVerified(msg.provider, mode, msg.body, reply)
            await self.ref.send(verdict)
        except ContractError as failure:
            reply(failure)
        except Exception:
            log.exception("%s webhook verification failed", provider.name)
            reply(Internal("internal", "An unexpected fault; it has been logged."))
        finally:
            self.verifying -= 1
            self.ledger.settled()

    def verified(self, msg: m.WebhookVerified, done: Reply) -> None:
        provider = self.ledger.provider(msg.provider)
        try:
            event = _bounded(_normalized(provider, msg.body, msg.mode))
        except MalformedPayload as exc:
            self._reject(
                msg.provider,
                msg.body,
                "malformed_payload",
                str(exc),
                msg.reply,
                InvalidRequest(
                    "malformed_payload",
                    f"The body verified but is not a readable event: {exc}",
                ),
            )
        else:
            self._accept(provider, msg.mode, event, msg.body, msg.reply)
        done(None)

    def refused(self, msg: m.WebhookRefused, done: Reply) -> None:
        failure = Unauthorized(
            "signature_invalid",
            _SIGNATURE_MESSAGES.get(msg.reason, msg.message),
            extra={"reason": msg.reason},
        )
        self._reject(msg.provider, msg.body, "signature_invalid", msg.reason, msg.reply, failure)
        done(None)

    # -- accepted deliveries -----------------------------------------------------------

    def _accept(
        self, provider: Provider, mode: str, event: NormalizedEvent, body: bytes, reply: Reply
    ) -> None:
        ledger = self.ledger
        first = self._seen(provider.name, event.dedup_ids)
        if first is not None:
            ledger.reply_read(reply, {"received": True, "eventId": first, "duplicate": True})
            return
        now = ledger.now_ms()
        ops: list[Op] = []
        tx = self._match(provider, mode, event)
        sub = None
        if tx is not None:
            sub = self._apply(provider, event, tx, ops)
        stored: dict[str, Any] = {
            "id": ids.new_evt_id(),
            "projectId": ledger.project_id,
            "provider": provider.name,
            "providerEventId": event.provider_event_id,
            "dedupIds": list(event.dedup_ids),
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
            # the provider's body names the buyer (CONTRACT 6): only its hash is kept, for audit
            "bodySha256": hashlib.sha256(body).hexdigest(),
        }
        ops += ledger.event_ops(stored)
        for dedup_id in event.dedup_ids:
            ops.append(ledger.index_op(keys.DEDUP, provider.name, dedup_id, stored["id"]))
        if tx is not None:
            # owed to the provider: durable with the event, or not at all
            ops += ledger.follow_up_ops(tx, provider.name, mode, event.follow_ups)
        if event.type not in QUOTA_EXEMPT:
            ops.append(self.quota.count(period_of(now), mode))
        answer = {"received": True, "eventId": stored["id"], "duplicate": False}
        ledger.commit(ops, reply, answer)

    def _seen(self, provider: str, dedup_ids: tuple[str, ...]) -> str | None:
        """The event stored first under any of ``dedup_ids``, if one was."""
        for dedup_id in dedup_ids:
            first = self.ledger.lookup(keys.DEDUP, provider, dedup_id)
            if first is not None:
                return first
        return None

    def _match(
        self, provider: Provider, mode: str, event: NormalizedEvent
    ) -> dict[str, Any] | None:
        ledger = self.ledger
        tx = ledger.tx(event.tx_id) if event.tx_id else None
        if tx is None:
            refs = (*event.refs, event.subscription_ref) if event.subscription_ref else event.refs
            for ref in refs:
                linked = ledger.lookup(keys.PROVIDER_REF, provider.name, ref)
                if linked is None:
                    continue
                if linked.startswith("sub_"):
                    sub = ledger.subscription(linked)
                    linked = sub["txId"] if sub else None
                tx = ledger.tx(linked) if linked else None
                if tx is not None:
                    break
        # An event of another provider or of the other mode never touches a transaction.
        if tx is None or tx["provider"] != provider.name or tx["isTest"] != (mode == "test"):
            return None
        return tx

    def _link(self, provider: str, ref: str, item_id: str, ops: list[Op]) -> None:
        if self.ledger.lookup(keys.PROVIDER_REF, provider, ref) != item_id:
            ops.append(self.ledger.index_op(keys.PROVIDER_REF, provider, ref, item_id))

    def _apply(
        self, provider: Provider, event: NormalizedEvent, tx: dict[str, Any], ops: list[Op]
    ) -> dict[str, Any] | None:
        """Move the transaction and its subscription where the event says, if the tables allow;
        an event that would move a status backwards is stored but changes nothing."""
        ledger = self.ledger
        for ref in event.link_refs:
            self._link(provider.name, ref, tx["id"], ops)
        tx_changed = False
        target = event.payment_status
        if target is not None and can_transition(Kind.PAYMENT, tx["status"], target):
            ledger.move(tx, target)
            tx_changed = True
        sub = ledger.subscription(tx["subscriptionId"]) if tx.get("subscriptionId") else None
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
                ledger.move(sub, sub_target)
                sub_changed = True
            if event.current_period_end_ms and event.current_period_end_ms != sub.get(
                "currentPeriodEnd"
            ):
                sub["currentPeriodEnd"] = event.current_period_end_ms
                sub["updatedAt"] = ledger.now_ms()
                sub_changed = True
            if event.provider_customer and not sub.get("providerCustomer"):
                sub["providerCustomer"] = event.provider_customer
                sub_changed = True
            if sub_changed:
                ops.extend(ledger.sub_ops(sub))
        if tx_changed:
            ops.extend(ledger.tx_ops(tx))
        return sub

    def _start_subscription(
        self, provider: Provider, event: NormalizedEvent, tx: dict[str, Any], ops: list[Op]
    ) -> dict[str, Any]:
        ledger = self.ledger
        now = ledger.now_ms()
        initial = (
            event.subscription_status
            if event.subscription_status in (Status.TRIALING, Status.ACTIVE)
            else Status.ACTIVE
        )
        sub = {
            "id": ids.new_sub_id(),
            "projectId": ledger.project_id,
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
        ledger.add(sub)
        ops.extend(ledger.sub_ops(sub))
        if event.subscription_ref:
            self._link(provider.name, event.subscription_ref, sub["id"], ops)
        return sub

    # -- refused deliveries ------------------------------------------------------------

    def _reject(
        self,
        provider: str,
        body: bytes,
        code: str,
        reason: str,
        reply: Reply,
        failure: ContractError,
    ) -> None:
        ledger = self.ledger
        if self._rejected is None:
            prefix = keys.prefix(ledger.project_id, keys.REJECTED)
            self._rejected = [key for key, _ in ledger.ctx.store.scan(prefix)]
        record = {
            "at": ledger.now_ms(),
            "provider": provider,
            "code": code,
            "reason": reason,
            "bodySha256": hashlib.sha256(body).hexdigest(),
            "bodyBytes": len(body),
        }
        key = keys.record(ledger.project_id, keys.REJECTED, ids.new_ulid())
        ops: list[Op] = [("records", key, pack(record))]
        self._rejected.append(key)
        while len(self._rejected) > REJECTED_KEPT:
            ops.append(("records", self._rejected.pop(0), None))
        ledger.commit(ops, reply, failure)

    def _forget_rejected(self) -> None:
        self._rejected = None


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


def _normalized(provider: Provider, body: bytes, mode: str) -> NormalizedEvent:
    """The adapter's reading of a verified body. A body it cannot read (too deep, numbers that
    overflow a date) is the sender's fault, answered 400, never a fault of the node's."""
    try:
        return provider.normalize(body, mode)
    except MalformedPayload:
        raise
    except (ValueError, TypeError, KeyError, AttributeError, OverflowError, RecursionError) as exc:
        raise MalformedPayload(f"{provider.name} body not readable ({type(exc).__name__})") from exc


# Provider ids become store keys (LMDB keys stop at 511 bytes): a longer one is a malformed event,
# refused for good before it is written, never a failed commit that the provider would retry.
MAX_PROVIDER_ID = 255
LATEST_MS = 253_402_300_800_000  # 10000-01-01: past any date a provider could mean


def _bounded(event: NormalizedEvent) -> NormalizedEvent:
    """``event`` if every value fits the store (CONTRACT 8); else ``MalformedPayload``."""
    named = (
        event.provider_event_id,
        event.provider_type,
        event.tx_id or "",
        event.subscription_ref or "",
        *event.dedup_ids,
        *event.refs,
        *event.link_refs,
    )
    for value in named:
        if len(value.encode("utf-8", "surrogatepass")) > MAX_PROVIDER_ID:
            raise MalformedPayload(f"an id of {len(value)} characters (at most {MAX_PROVIDER_ID})")
    texts = (*named, event.currency or "", event.customer_ref or "", event.provider_customer or "")
    if first_flaw([*texts, dict(event.metadata)]) is not None:
        raise MalformedPayload("text that is not valid Unicode")
    if event.amount_minor is not None and abs(event.amount_minor) > MAX_MINOR:
        raise MalformedPayload(f"an amount beyond {MAX_MINOR} minor units")
    for moment in (event.occurred_at_ms, event.current_period_end_ms):
        if moment is not None and not 0 <= moment < LATEST_MS:
            raise MalformedPayload("a timestamp outside any calendar")
    return event
