"""The webhook pipeline of one project.

verify (the provider's signature over the raw bytes, each mode's secrets; the one that matches
decides ``isTest``) -> normalize -> deduplicate by each of the event's ``dedup_ids`` -> match to
a transaction (echoed tx id, else a provider id linked earlier) -> apply the transition, never
backwards -> store the event with its customerRef and its durable follow-ups -> count it ->
reply after the commit.

Verification runs off the actor, in the caller's task (``edge.actors.deliveries``; a provider
may fetch its signing certificate): the actor hands out the opened credentials at once and goes
on with its other messages; the verdict comes back as a message (``WebhookVerified`` or
``WebhookRefused``) that the actor applies without waiting.

Refused deliveries are kept (the last ``REJECTED_KEPT``) with time, provider, reason and a hash
of the body, so a merchant can be told exactly why a provider's webhooks fail.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import replace
from typing import Any

from edge.actors import messages as m
from edge.actors.project import story
from edge.actors.project.ledger import Ledger, Reply
from edge.actors.project.quota import Quota
from edge.domain import ids
from edge.domain.convergence import Fate, Step
from edge.domain.events import QUOTA_EXEMPT, EventType
from edge.domain.inputs import first_flaw
from edge.domain.money import MAX_MINOR
from edge.domain.quota import period_of
from edge.domain.status import Kind, Status, partially_refunded
from edge.errors import ContractError, InvalidRequest, Unauthorized
from edge.providers.base import MalformedPayload, NormalizedEvent, Provider
from edge.providers.credentials import MODES
from edge.store import keys
from edge.store.codec import pack
from edge.store.writer import Op

log = logging.getLogger("edge.actors")

REJECTED_KEPT = 1000


class WebhookIntake:
    def __init__(self, ledger: Ledger, quota: Quota) -> None:
        self.ledger = ledger
        self.quota = quota
        self._rejected: list[bytes] | None = None  # keys, oldest first, loaded on first use
        ledger.on_reload(self._forget_rejected)

    # -- entry ------------------------------------------------------------------------

    def receive(self, msg: m.Webhook, reply: Reply) -> None:
        """The enabled provider and this project's opened credentials, for the caller to check
        the delivery's signature with (``edge.actors.deliveries``)."""
        provider = self.ledger.provider(msg.provider)
        opened = {mode: self.ledger.credentials(provider, mode) for mode in MODES}
        credentials = {
            mode: plain for mode, plain in opened.items() if provider.is_configured(plain)
        }
        reply(m.WebhookKeys(provider, credentials))

    def verified(self, msg: m.WebhookVerified, reply: Reply) -> None:
        provider = self.ledger.provider(msg.provider)
        try:
            event = _bounded(_normalized(provider, msg.body, msg.mode))
        except MalformedPayload as exc:
            self._reject(
                msg.provider,
                msg.body,
                "malformed_payload",
                str(exc),
                str(exc),
                reply,
                InvalidRequest(
                    "malformed_payload",
                    f"The body verified but is not a readable event: {exc}",
                ),
            )
        else:
            duplicate = self._accept(provider, msg.mode, event, msg.body, reply)
            self.ledger.ctx.metrics.webhook(provider.name, "duplicate" if duplicate else "accepted")

    def refused(self, msg: m.WebhookRefused, reply: Reply) -> None:
        failure = Unauthorized(
            "signature_invalid",
            _SIGNATURE_MESSAGES.get(msg.reason, msg.message),
            extra={"reason": msg.reason},
        )
        self._reject(
            msg.provider, msg.body, "signature_invalid", msg.reason, msg.message, reply, failure
        )

    def reported(self, msg: m.FollowUpReported, reply: Reply) -> None:
        """A provider's answer to a follow-up, applied as its events (each deduplicated like a
        delivery); ``reply`` once all are durable."""
        provider = self.ledger.provider(msg.provider)
        try:
            events = [_bounded(event) for event in msg.events]
        except MalformedPayload as exc:
            raise InvalidRequest("malformed_payload", str(exc)) from None
        if not events:
            reply({"applied": 0})
            return
        waiting = len(events)
        failures: list[Any] = []

        def one_done(answer: Any) -> None:
            nonlocal waiting
            waiting -= 1
            if isinstance(answer, ContractError):
                failures.append(answer)
            if waiting == 0:
                reply(failures[0] if failures else {"applied": len(events)})

        for event in events:
            self._accept(provider, msg.mode, event, msg.body, one_done)

    # -- accepted deliveries -----------------------------------------------------------

    def _accept(
        self, provider: Provider, mode: str, event: NormalizedEvent, body: bytes, reply: Reply
    ) -> bool:
        """Store and apply ``event``, replying after the commit; True when it was a duplicate."""
        ledger = self.ledger
        first = self._seen(provider.name, event.dedup_ids)
        if first is not None:
            ledger.reply_read(reply, {"received": True, "eventId": first, "duplicate": True})
            return True
        now = ledger.now_ms()
        evt_id = ids.new_evt_id()
        ops: list[Op] = []
        tx = self._match(provider, mode, event)
        if tx is not None:
            event = against_transaction(event, tx)
        settled = self._apply(provider, event, evt_id, tx, ops) if tx is not None else None
        sub = settled.sub if settled else None
        # money for an ended checkout: found late by the fold, or said so by the provider
        # (BTCPay's InvoicePaidAfterExpiration)
        late = settled is not None and (
            evt_id in settled.late or event.type is EventType.PAYMENT_PAID_LATE
        )
        fate = settled.fates.get(evt_id, Fate.APPLIED) if settled else None
        stored: dict[str, Any] = {
            "id": evt_id,
            "projectId": ledger.project_id,
            "provider": provider.name,
            "providerEventId": event.provider_event_id,
            "dedupIds": list(event.dedup_ids),
            "providerType": event.provider_type,
            "type": str(
                EventType.UNMATCHED
                if tx is None
                else EventType.PAYMENT_PAID_LATE
                if late
                else event.type
            ),
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
            "appliedAt": now if fate is Fate.APPLIED else None,
            "version": tx["version"] if tx else None,
            # the provider's body names the buyer (CONTRACT 6): only its hash is kept, for audit
            "bodySha256": hashlib.sha256(body).hexdigest(),
        }
        if tx is None:
            ops += self._wait(provider.name, event, stored)
        ops += ledger.new_event_ops(stored)
        for dedup_id in event.dedup_ids:
            ops.append(ledger.index_op(keys.DEDUP, provider.name, dedup_id, stored["id"]))
        if tx is not None:
            # this event, or one that waited for it, is money for an ended checkout: the
            # merchant decides whether to fulfil or refund
            attention = late or bool(settled and settled.late)
            if attention and not tx.get("needsAttention"):
                tx["needsAttention"] = True
                ops += ledger.tx_ops(tx)
            # owed to the provider: durable with the event, or not at all
            ops += ledger.follow_up_ops(tx, provider.name, mode, event.follow_ups)
        if event.type not in QUOTA_EXEMPT:
            ops.append(self.quota.count(period_of(now), mode))
        answer = {"received": True, "eventId": stored["id"], "duplicate": False}
        ledger.commit(ops, reply, answer)
        return False

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
            for ref in _refs(event):
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

    def _apply(
        self,
        provider: Provider,
        event: NormalizedEvent,
        evt_id: str,
        tx: dict[str, Any],
        ops: list[Op],
    ) -> story.Settled:
        """Fold the event into the transaction's story, with the events that waited for a
        provider id it links (CONTRACT 2: the outcome does not depend on delivery order)."""
        ledger = self.ledger
        entries: list[story.Entry] = []
        entry = _entry(evt_id, event, ledger.now_ms())
        if entry is not None:
            entries.append(entry)
        refs = event.link_refs
        if event.subscription_ref and tx["kind"] == Kind.SUBSCRIPTION:
            # the provider's subscription is this checkout's: later events name only it
            refs = (*refs, event.subscription_ref)
        rematched = self._link(provider.name, tx, refs, ops)
        entries += [entry for entry, _ in rematched]
        settled = story.settle(ledger, tx, entries, ops)
        sub = settled.sub
        if sub is not None and event.provider_customer and not sub.get("providerCustomer"):
            sub["providerCustomer"] = event.provider_customer
            ops.extend(ledger.sub_ops(sub))
        now = ledger.now_ms()
        for entry, waited in rematched:
            event_id = entry.step.event_id
            matched_type = waited["match"]["type"]
            waited = {k: v for k, v in waited.items() if k != "match"}
            waited.update(
                type=EventType.PAYMENT_PAID_LATE if event_id in settled.late else matched_type,
                txId=tx["id"],
                subscriptionId=tx.get("subscriptionId"),
                status=tx["status"],
                matchedAt=now,
                appliedAt=now if settled.fates.get(event_id) is Fate.APPLIED else None,
            )
            ops += ledger.event_ops(waited)
        return settled

    def _link(
        self, provider: str, tx: dict[str, Any], refs: tuple[str, ...], ops: list[Op]
    ) -> list[tuple[story.Entry, dict[str, Any]]]:
        """Remember ``refs`` for ``tx``; the unmatched events that named one of them are
        matched now (with their stored events), and what they link is linked in turn."""
        ledger = self.ledger
        rematched: list[tuple[story.Entry, dict[str, Any]]] = []
        todo = list(refs)
        while todo:
            ref = todo.pop(0)
            if ledger.lookup(keys.PROVIDER_REF, provider, ref) == tx["id"]:
                continue
            ops.append(ledger.index_op(keys.PROVIDER_REF, provider, ref, tx["id"]))
            waiting = ledger.lookup(keys.WAITING, provider, ref)
            if waiting is None:
                continue
            left = []  # the other mode's events keep waiting
            for evt_id in waiting.split():
                waited = ledger.stored_event(evt_id)
                if waited is None or waited.get("txId") or "match" not in waited:
                    continue  # pruned, or matched already under another of its ids
                if waited["isTest"] != tx["isTest"]:
                    left.append(evt_id)
                elif all(evt_id != e.step.event_id for e, _ in rematched):
                    rematched.append((_waiting_entry(waited, tx), waited))
                    todo += waited["match"].get("linkRefs", [])
            ops.append(
                ledger.index_op(keys.WAITING, provider, ref, " ".join(left))
                if left
                else ledger.unindex_op(keys.WAITING, provider, ref)
            )
        return rematched

    def _wait(self, provider: str, event: NormalizedEvent, stored: dict[str, Any]) -> list[Op]:
        """An unmatched event that asks for a move waits under each provider id it names, to be
        matched when a later event links one of them (CONTRACT 2)."""
        entry = _entry(stored["id"], event, stored["receivedAt"])
        refs = _refs(event)
        if entry is None or not refs:
            return []
        step = entry.step
        stored["match"] = {
            "type": step.type,
            "payment": step.payment,
            "subscription": step.subscription,
            "starts": step.starts,
            "start": entry.start,
            "periodEnd": entry.period_end,
            "linkRefs": list(event.link_refs),
            "refundedTotal": event.refunded_total_minor,
        }
        ops: list[Op] = []
        for ref in refs:
            earlier = (self.ledger.lookup(keys.WAITING, provider, ref) or "").split()
            waiting = [*earlier[-(WAITING_KEPT - 1) :], stored["id"]]
            ops.append(self.ledger.index_op(keys.WAITING, provider, ref, " ".join(waiting)))
        return ops

    # -- refused deliveries ------------------------------------------------------------

    def _reject(
        self,
        provider: str,
        body: bytes,
        code: str,
        reason: str,
        detail: str,
        reply: Reply,
        failure: ContractError,
    ) -> None:
        """Keep a refused delivery: ``detail`` is the node's own account of it (an offset, a
        parse error), never the body."""
        ledger = self.ledger
        ledger.ctx.metrics.webhook(provider, reason if code == "signature_invalid" else code)
        # the merchant's first clue when every payment stays pending: say it where operators look
        log.warning(
            "refused a %s webhook for project %s: %s (%s)",
            provider,
            ledger.project_id,
            code,
            reason,
        )
        if self._rejected is None:
            prefix = keys.prefix(ledger.project_id, keys.REJECTED)
            self._rejected = [key for key, _ in ledger.ctx.store.scan(prefix)]
        record = {
            "at": ledger.now_ms(),
            "provider": provider,
            "code": code,
            "reason": reason,
            "detail": detail[:300],
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


WAITING_KEPT = 50  # unmatched events waiting under one provider id


def _refs(event: NormalizedEvent) -> tuple[str, ...]:
    """The provider ids an event may be matched by."""
    refs = (*event.refs, event.subscription_ref) if event.subscription_ref else event.refs
    return tuple(dict.fromkeys(refs))


def against_transaction(event: NormalizedEvent, tx: dict[str, Any]) -> NormalizedEvent:
    """What ``event`` asks of ``tx`` where the provider left it to the node (PayPal): a refund
    is full once its total reaches the amount paid, else partial."""
    if partially_refunded(event.payment_status, event.refunded_total_minor, tx["amount"]):
        event = replace(
            event,
            type=EventType.PAYMENT_PARTIALLY_REFUNDED,
            payment_status=Status.PARTIALLY_REFUNDED,
        )
    return event


def _entry(evt_id: str, event: NormalizedEvent, received_at: int) -> story.Entry | None:
    """The step of the story an event asks for; None when it asks for no move."""
    if (
        event.payment_status is None
        and event.subscription_status is None
        and not event.starts_subscription
    ):
        return None
    step = Step(
        event_id=evt_id,
        at=event.occurred_at_ms if event.occurred_at_ms is not None else received_at,
        type=str(event.type),
        payment=event.payment_status,
        subscription=event.subscription_status,
        starts=event.starts_subscription,
    )
    start = (
        {"ref": event.subscription_ref, "customer": event.provider_customer}
        if event.starts_subscription
        else None
    )
    return story.Entry(step, start, event.current_period_end_ms)


def _waiting_entry(waited: dict[str, Any], tx: dict[str, Any]) -> story.Entry:
    """The step of an event that waited for ``tx``, decided against it now as it would have
    been had it matched at once (``against_transaction``)."""
    match = waited["match"]
    if partially_refunded(match.get("payment"), match.get("refundedTotal"), tx["amount"]):
        match.update(
            type=str(EventType.PAYMENT_PARTIALLY_REFUNDED), payment=Status.PARTIALLY_REFUNDED
        )
    step = Step(
        event_id=waited["id"],
        at=waited["occurredAt"] if waited.get("occurredAt") is not None else waited["receivedAt"],
        type=match["type"],
        payment=Status(match["payment"]) if match.get("payment") else None,
        subscription=Status(match["subscription"]) if match.get("subscription") else None,
        starts=bool(match.get("starts")),
    )
    return story.Entry(step, match.get("start"), match.get("periodEnd"))


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
