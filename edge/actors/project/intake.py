"""The webhook pipeline of one project.

verify (the provider's signature over the raw bytes, each mode's secrets; the one that matches
decides ``isTest``) -> normalize -> deduplicate by each of the event's ``dedup_ids``, in its
mode -> match to a transaction by the provider objects the node linked to it (``matching``) ->
check the money it reports against the transaction's amount and currency (a mismatch moves
nothing and flags the transaction) -> apply the transition, never backwards, refunds summed by
amount -> store the event with its customerRef and its durable follow-ups -> count it -> reply
after the commit.

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
from typing import Any

from edge.actors import messages as m
from edge.actors.project import story
from edge.actors.project.attention import flag
from edge.actors.project.ledger import Ledger, Reply
from edge.actors.project.matching import Matching
from edge.actors.project.quota import Quota
from edge.actors.project.refunds import Refunds
from edge.domain import attention, ids
from edge.domain.changes import change_key, remember
from edge.domain.convergence import Fate, Refund, Step
from edge.domain.events import QUOTA_EXEMPT, SOURCE_NODE, SOURCE_SYNC, SOURCE_WEBHOOK, EventType
from edge.domain.inputs import first_flaw
from edge.domain.modes import MODES
from edge.domain.money import MAX_MINOR
from edge.domain.paid import paid_as_asked
from edge.domain.quota import period_of
from edge.domain.refunds import reported as refunds_reported
from edge.domain.status import Kind, Status
from edge.errors import ContractError, InvalidRequest, Unauthorized
from edge.providers.base import MalformedPayload, NormalizedEvent, Provider
from edge.store import keys
from edge.store.codec import pack
from edge.store.engine import Op

log = logging.getLogger("edge.actors")

REJECTED_KEPT = 1000
LEARNED = frozenset({"accepted", "amount_mismatch"})  # a change of a transaction, told now


class WebhookIntake:
    def __init__(self, ledger: Ledger, quota: Quota, refunds: Refunds) -> None:
        self.ledger = ledger
        self.quota = quota
        self.refunds = refunds
        self.matching = Matching(ledger)
        self._told_waited = 0  # waited events told by the last deliveries (``take_all``)
        self._rejected: list[bytes] | None = None  # keys, oldest first, loaded on first use
        ledger.on_reload(self._forget_rejected)

    # -- entry ------------------------------------------------------------------------

    async def receive(self, msg: m.Webhook, reply: Reply) -> None:
        """The enabled provider and this project's opened credentials, for the caller to check
        the delivery's signature with (``edge.actors.deliveries``)."""
        provider = self.ledger.provider(msg.provider)
        opened = {mode: self.ledger.credentials(provider, mode) for mode in MODES}
        credentials = {
            mode: plain for mode, plain in opened.items() if provider.is_configured(plain)
        }
        reply(m.WebhookKeys(provider, credentials))

    async def verified(self, msg: m.WebhookVerified, reply: Reply) -> None:
        provider = self.ledger.provider(msg.provider)
        try:
            event = _bounded(_normalized(provider, msg.body, msg.mode))
        except MalformedPayload as exc:
            await self._reject(
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
            ops: list[Op] = []
            answer, outcome = await self._take(provider, msg.mode, event, msg.body, ops)
            self._answer(ops, answer, reply)
            self.ledger.ctx.metrics.webhook(provider.name, outcome)

    async def refused(self, msg: m.WebhookRefused, reply: Reply) -> None:
        failure = Unauthorized(
            "signature_invalid",
            _SIGNATURE_MESSAGES.get(msg.reason, msg.message),
            extra={"reason": msg.reason},
        )
        await self._reject(
            msg.provider, msg.body, "signature_invalid", msg.reason, msg.message, reply, failure
        )

    async def reported(self, msg: m.FollowUpReported, reply: Reply) -> None:
        """A provider's answer to a follow-up, applied as its events (each deduplicated like a
        delivery) in one commit; ``reply`` once it is durable."""
        provider = self.ledger.provider(msg.provider)
        ops: list[Op] = []
        told = await self.take_all(provider, msg.mode, msg.events, msg.body, SOURCE_NODE, ops)
        self.ledger.commit(ops, reply, {"applied": len(told)})

    async def take_all(
        self,
        provider: Provider,
        mode: str,
        events: tuple[NormalizedEvent, ...],
        body: bytes,
        source: str,
        ops: list[Op],
    ) -> list[dict[str, Any]]:
        """Store and apply ``events`` as one delivery would each (their writes into ``ops``,
        for one commit); one answer for each change of a transaction told now that the node
        did not have: the events' own (neither a duplicate, nor a repeat, nor unmatched), and
        the events that waited unmatched until these linked them."""
        try:
            bounded = [_bounded(event) for event in events]
        except MalformedPayload as exc:
            raise InvalidRequest("malformed_payload", str(exc)) from None
        self._told_waited = 0
        answers = [await self._take(provider, mode, event, body, ops, source) for event in bounded]
        told = [answer for answer, outcome in answers if outcome in LEARNED]
        # and the events that waited unmatched until these linked them, told now
        return told + [{"matched": True}] * self._told_waited

    # -- accepted deliveries -----------------------------------------------------------

    def _answer(self, ops: list[Op], answer: dict[str, Any], reply: Reply) -> None:
        """Reply once what the answer shows is durable: the writes, or a duplicate's first."""
        if ops:
            self.ledger.commit(ops, reply, answer)
        else:
            self.ledger.reply_read(reply, answer)

    async def _take(
        self,
        provider: Provider,
        mode: str,
        event: NormalizedEvent,
        body: bytes,
        ops: list[Op],
        source: str = SOURCE_WEBHOOK,
    ) -> tuple[dict[str, Any], str]:
        """Store and apply ``event``, its writes into ``ops`` (none for a duplicate); the
        answer, and what became of it: accepted, duplicate (an event already stored), repeat
        (a change already told: stored as history, answered as a duplicate), unmatched or
        amount_mismatch. ``source`` says how the node learned it
        (``edge.domain.events.SOURCES``)."""
        ledger = self.ledger
        seen = await self._seen(provider.name, mode, event.dedup_ids)
        if seen is not None:
            return {"received": True, "eventId": seen, "duplicate": True}, "duplicate"
        now = ledger.now_ms()
        evt_id = ids.new_evt_id()
        tx = await self.matching.match(provider.name, mode, event)
        mismatched = tx is not None and _mismatched(event, tx)
        settled: story.Settled | None = None
        flags: list[dict[str, Any]] = []
        given_back = 0
        status_before = tx["status"] if tx is not None else None
        if tx is not None:
            given_back = refunds_reported(story.steps(tx)).given_back
            entry = None if mismatched else _entry(evt_id, event, now)
            refs = event.link_refs
            if event.subscription_ref and tx["kind"] == Kind.SUBSCRIPTION:
                # the provider's subscription is this checkout's: later events name only it
                refs = (*refs, event.subscription_ref)
            settled, flags = await self._apply(
                provider.name, tx, [entry] if entry else [], refs, ops, source
            )
            sub = settled.sub
            if sub is not None and event.provider_customer and not sub.get("providerCustomer"):
                sub["providerCustomer"] = event.provider_customer
                ops += ledger.sub_ops(sub)
        sub = settled.sub if settled else None
        # money for an ended checkout: found late by the fold, or said so by the provider
        # (BTCPay's InvoicePaidAfterExpiration)
        late = settled is not None and (
            evt_id in settled.late or event.type is EventType.PAYMENT_PAID_LATE
        )
        fate = settled.fates.get(evt_id, Fate.APPLIED) if settled else None
        stored_type = _stored_type(event, evt_id, tx, settled, mismatched, late)
        if (
            stored_type == EventType.PAYMENT_PARTIALLY_REFUNDED
            and tx is not None
            and tx["status"] == Status.REFUNDED
            and status_before != Status.REFUNDED
        ):
            # the refund that brought the sum to what was charged is the one that refunded
            # it, whatever place the provider's timestamps give it in the story
            stored_type = EventType.PAYMENT_REFUNDED
        told, recorded = None, False
        if tx is not None:
            told, recorded = _change(tx, stored_type, event, evt_id, sub, given_back)
            first = await ledger.stored_event(told) if told is not None else None
            if first is not None:
                # a repeat is stored as what it repeats (a refund's full or partial word was
                # earned by the first report)
                stored_type = EventType(first["type"])
        stored: dict[str, Any] = {
            "id": evt_id,
            "projectId": ledger.project_id,
            "provider": provider.name,
            "providerEventId": event.provider_event_id,
            "dedupIds": list(event.dedup_ids),
            "providerType": event.provider_type,
            "type": str(stored_type),
            "txId": tx["id"] if tx else None,
            "subscriptionId": sub["id"] if sub else (tx or {}).get("subscriptionId"),
            "status": _status_after(event, tx, sub),
            "amount": event.amount_minor if event.states_amount else (tx or {}).get("amount"),
            "currency": event.currency if event.states_amount else (tx or {}).get("currency"),
            "isTest": mode == "test",
            # a matched event carries the checkout's own: what a body echoes may be anyone's
            # (Paddle.js replaces custom_data from the buyer's page)
            "customerRef": tx.get("customerRef") if tx else event.customer_ref,
            "metadata": dict((tx.get("metadata") if tx else event.metadata) or {}),
            "occurredAt": event.occurred_at_ms,
            "receivedAt": now,
            "appliedAt": now if fate is Fate.APPLIED and not mismatched else None,
            "version": tx["version"] if tx else None,
            # the provider's body names the buyer (CONTRACT 6): only its hash is kept, for audit
            "bodySha256": hashlib.sha256(body).hexdigest(),
            "source": source,
        }
        if tx is not None and stored_type in _REFUND_TYPES:
            # all that was given back once this one is counted, beside the refund's own amount
            stored["refunded"] = refunds_reported(story.steps(tx)).given_back
        if told is not None:
            # a change already told: history on the transaction, not a second event told
            stored["duplicateOf"] = told
        if event.unreadable_amount is not None:
            stored["providerAmount"] = event.unreadable_amount
        if tx is None:
            claimed = await self.matching.claimed(event)
            if claimed is not None:
                stored["claimedTxId"] = claimed
                log.info(
                    "project %s: a %s event names %s on an object the node did not create",
                    ledger.project_id,
                    provider.name,
                    claimed,
                )
            # it waits under each provider id it names, to be matched (and applied, if it asks
            # for a move) when a later event links one of them (CONTRACT 2)
            stored["match"] = _match_record(event)
            ops += await self.matching.wait(provider.name, event, evt_id)
        else:
            if mismatched:
                stored.update(expectedAmount=tx["amount"], expectedCurrency=tx["currency"])
                flags.append(_mismatch_flag(stored))
            if told is None:
                if late:
                    flags.append(_late_money(tx, stored))
                if event.attention:
                    flags.append({"code": event.attention, "eventId": evt_id})
                flags += _money_flags(stored_type, event, stored)
            observed = event.provider_refund is not None and self.refunds.observed(
                tx, event.provider_refund
            )
            followed = told is not None and source == SOURCE_WEBHOOK and _webhook_followed(tx, now)
            if flag(tx, flags) or observed or recorded or followed:
                ops += ledger.tx_ops(tx)
            if not mismatched:  # owed to the provider: durable with the event, or not at all
                ops += ledger.follow_up_ops(tx, provider.name, mode, event.follow_ups)
        # a change told once: a provider's repeat is stored as history, never notified; what
        # asking finds that the node had already is not stored at all (its ids are kept, so
        # asking again is a duplicate): it would only echo the history
        space = _dedup_space(provider.name, mode)
        if told is None:
            ops += ledger.new_event_ops(stored)
        elif source != SOURCE_SYNC:
            ops += ledger.event_ops(stored)
        for dedup_id in event.dedup_ids:
            ops.append(ledger.index_op(keys.DEDUP, space, dedup_id, told or evt_id))
        if event.type not in QUOTA_EXEMPT and source != SOURCE_SYNC and told is None:
            # the quota counts what providers deliver (CONTRACT 8), not what the node asks, and
            # a repeat is answered as a duplicate: not counted again (CONTRACT 4.3)
            ops.append(await self.quota.count(period_of(now), mode))
        if told is not None:
            # a change the node already had (learned by asking, or from another event of the
            # provider's): a duplicate, kept as history under its own id
            return {"received": True, "eventId": told, "duplicate": True}, "repeat"
        answer = {"received": True, "eventId": stored["id"], "duplicate": False}
        if tx is None:
            return answer, "unmatched"
        if source == SOURCE_SYNC:
            asked_learned(tx, now)
            ops += ledger.tx_ops(tx)
        ledger.ctx.metrics.learned(provider.name, source)
        return answer, "amount_mismatch" if mismatched else "accepted"

    async def _seen(self, provider: str, mode: str, dedup_ids: tuple[str, ...]) -> str | None:
        """The event stored first under any of ``dedup_ids`` in this mode, if one was: a
        test-signed event never shadows a live one with the same id (CONTRACT 4.3)."""
        ledger = self.ledger
        for dedup_id in dedup_ids:
            first = await ledger.lookup(keys.DEDUP, _dedup_space(provider, mode), dedup_id)
            # the live space may hold a test event kept before the modes had spaces of their own
            if first is not None and (mode == "test" or await _mode_of(ledger, first) != "test"):
                return first
            if mode == "test":
                # kept by a node from before the modes had spaces of their own
                legacy = await ledger.lookup(keys.DEDUP, provider, dedup_id)
                if legacy is not None and await _mode_of(ledger, legacy) == "test":
                    return legacy
        return None

    async def linked(self, tx: dict[str, Any], ref: str, ops: list[Op]) -> None:
        """The provider answered the checkout call with its object ``ref``: the events that
        came before it and waited under it are matched and folded in now."""
        _, flags = await self._apply(tx["provider"], tx, [], (ref,), ops)
        if flag(tx, flags):
            ops += self.ledger.tx_ops(tx)

    async def _apply(
        self,
        provider: str,
        tx: dict[str, Any],
        entries: list[story.Entry],
        refs: tuple[str, ...],
        ops: list[Op],
        source: str = SOURCE_WEBHOOK,
    ) -> tuple[story.Settled, list[dict[str, Any]]]:
        """Fold ``entries`` into the transaction's story, with the events that waited for a
        provider id in ``refs`` (CONTRACT 2: the outcome does not depend on delivery order);
        what the merchant must be told of it."""
        ledger = self.ledger
        waited = await self.matching.link(provider, tx, refs, ops)
        rematched = [
            (w, True, None) if _waited_mismatched(w, tx) else (w, False, _waiting_entry(w))
            for w in waited
        ]
        folded = [entry for _, _, entry in rematched if entry is not None]
        settled = await story.settle(ledger, tx, [*entries, *folded], ops)
        # money that came late is flagged with its amount where each event is stored: the
        # new ones by the caller, the ones that waited below
        flags: list[dict[str, Any]] = []
        if settled.contradicted:
            flags.append({"code": attention.CONTRADICTED})
        now = ledger.now_ms()
        # the money each waited refund adds is counted from what was known without them
        waited_ids = {w["id"] for w, _, _ in rematched}
        known = [step for step in story.steps(tx) if step.event_id not in waited_ids]
        for event, mismatched, entry in rematched:
            event_id, match = event["id"], event["match"]
            event = {k: v for k, v in event.items() if k != "match"}
            fate = settled.fates.get(event_id) if entry is not None else Fate.APPLIED
            if mismatched:
                event.update(expectedAmount=tx["amount"], expectedCurrency=tx["currency"])
                kind = EventType.PAYMENT_AMOUNT_MISMATCH
                flags.append(_mismatch_flag(event))
            elif event_id in settled.late:
                kind = EventType.PAYMENT_PAID_LATE
            elif event_id in settled.targets:
                kind = _refund_type(settled.targets[event_id])
            else:
                kind = EventType(match["type"])
            event.update(
                type=str(kind),
                txId=tx["id"],
                subscriptionId=tx.get("subscriptionId"),
                status=tx["status"],
                customerRef=tx.get("customerRef"),
                metadata=dict(tx.get("metadata") or {}),
                matchedAt=now,
                appliedAt=now if fate is Fate.APPLIED and not mismatched else None,
            )
            if kind in (EventType.PAYMENT_REFUNDED, EventType.PAYMENT_PARTIALLY_REFUNDED):
                before = refunds_reported(known).given_back
                known.append(entry.step if entry is not None else Step(event_id, 0, str(kind)))
                first = _refund_change(tx, event_id, before, refunds_reported(known).given_back)
            else:
                first = _waited_change(tx, kind, match, event, settled.sub)
            if first is not None:
                event["duplicateOf"] = first
                ops += ledger.event_ops(event)
                continue
            self._told_waited += 1
            if source == SOURCE_SYNC:
                asked_learned(tx, now)
            if kind is EventType.PAYMENT_PAID_LATE:
                flags.append(_late_money(tx, event))
            flags += _waited_flags(kind, match, event)
            # told now, as what it turned out to be (it was told as unmatched only to the
            # endpoints that take unmatched events)
            ops += ledger.new_event_ops(event)
        return settled, flags

    # -- refused deliveries ------------------------------------------------------------

    async def _reject(
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
            self._rejected = [key for key, _ in await ledger.ctx.store.scan(prefix)]
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


def _dedup_space(provider: str, mode: str) -> str:
    """Where a mode's dedup ids are kept: a test-signed event never shadows a live one. Live
    events keep the provider's own name, as every node before the split did."""
    return provider if mode == "live" else f"{provider}/test"


async def _mode_of(ledger: Ledger, evt_id: str) -> str | None:
    event = await ledger.stored_event(evt_id)
    if event is None:
        return None
    return "test" if event.get("isTest") else "live"


def _pays(event: NormalizedEvent) -> bool:
    """Does the event report money paid for the checkout, or ask the node to take it (PayPal's
    approved order, to capture)? A dispute's closing reports no payment."""
    if event.type is EventType.PAYMENT_DISPUTE_CLOSED:
        return False
    return (
        event.payment_status in (Status.SUCCEEDED, Status.PROCESSING)
        or event.starts_subscription
        or bool(event.follow_ups)
    )


def _mismatched(event: NormalizedEvent, tx: dict[str, Any]) -> bool:
    """Money reported for ``tx`` that is not what it asked: it must not complete it."""
    return (
        _pays(event)
        and event.states_amount
        and not paid_as_asked(tx["amount"], tx["currency"], event.amount_minor, event.currency)
    )


def _waited_mismatched(waited: dict[str, Any], tx: dict[str, Any]) -> bool:
    """``_mismatched`` for an event that waited unmatched, from what was stored of it."""
    stated = waited.get("amount") is not None or waited.get("providerAmount") is not None
    return (
        bool(waited["match"].get("pays"))
        and stated
        and not paid_as_asked(
            tx["amount"], tx["currency"], waited.get("amount"), waited.get("currency")
        )
    )


def _mismatch_flag(event: dict[str, Any]) -> dict[str, Any]:
    return {
        "code": "amount_mismatch",
        "eventId": event["id"],
        "amount": event.get("amount"),
        "currency": event.get("currency"),
        "providerAmount": event.get("providerAmount"),
        "expectedAmount": event["expectedAmount"],
        "expectedCurrency": event["expectedCurrency"],
    }


_LAST_REFUND = "refund:last"  # the change that last added to the money given back
_MONEY_FLAGS = {
    EventType.PAYMENT_REFUND_FAILED: attention.REFUND_FAILED,
    EventType.PAYMENT_DISPUTE_WARNING: attention.DISPUTE_WARNING,
    EventType.PAYMENT_DISPUTED: attention.DISPUTED,
}


def _change(
    tx: dict[str, Any],
    stored_type: EventType,
    event: NormalizedEvent,
    evt_id: str,
    sub: dict[str, Any] | None,
    given_back_before: int,
) -> tuple[str | None, bool]:
    """(the event that already told this change, or None; whether ``tx`` changed): one change,
    one event (``edge.domain.changes``). A refund is a change when it adds to the money the
    provider reports given back, whatever the events that report it (Stripe's refund events
    and ``charge.refunded``, a sync and a late webhook)."""
    refund_types = (EventType.PAYMENT_REFUNDED, EventType.PAYMENT_PARTIALLY_REFUNDED)
    if stored_type in refund_types and event.refund is not None:
        after = refunds_reported(story.steps(tx)).given_back
        first = _refund_change(tx, evt_id, given_back_before, after)
        return first, first is None
    stated = event.states_amount
    key = change_key(
        stored_type,
        named=event.change,
        refund_of=event.refund.of if event.refund else None,
        amount=event.amount_minor if stated else tx.get("amount"),
        currency=event.currency if stated else tx.get("currency"),
        sub_status=sub["status"] if sub and event.subscription_status else None,
        sub_version=sub["version"] if sub and event.subscription_status else None,
    )
    if key is None:
        return None, False
    first = _remember(tx, key, evt_id)
    return first, first is None


def _refund_change(tx: dict[str, Any], evt_id: str, before: int, after: int) -> str | None:
    """A refund event is a change when it adds to the money given back (``before`` ->
    ``after``); else the repeat of the refund change told last (its id returned)."""
    if after <= before:
        return (tx.get("changes") or {}).get(_LAST_REFUND)
    tx.setdefault("changes", {})[_LAST_REFUND] = evt_id
    _remember(tx, f"refund:{after}", evt_id)
    return None


def _remember(tx: dict[str, Any], key: str, evt_id: str) -> str | None:
    return remember(tx.setdefault("changes", {}), key, evt_id)


def _waited_change(
    tx: dict[str, Any],
    kind: EventType,
    match: dict[str, Any],
    event: dict[str, Any],
    sub: dict[str, Any] | None,
) -> str | None:
    """``_change`` for an event that waited unmatched, from what was stored of it."""
    refund = match.get("refund")
    key = change_key(
        kind,
        named=match.get("change"),
        refund_of=refund[1] if refund else None,
        amount=event.get("amount"),
        currency=event.get("currency"),
        sub_status=sub["status"] if sub and match.get("subscription") else None,
        sub_version=sub["version"] if sub and match.get("subscription") else None,
    )
    return _remember(tx, key, event["id"]) if key is not None else None


def asked_learned(tx: dict[str, Any], now: int) -> None:
    """Asking the provider (a sync, a walk of its lists) told a change of ``tx`` that no
    webhook had brought: counted on the transaction (``asked``), for the merchant's eyes."""
    asked = tx.setdefault("asked", {"at": now, "found": True, "learned": 0})
    asked["learned"] = int(asked.get("learned", 0)) + 1
    asked.pop("webhookAt", None)  # learned again by asking: the webhooks stopped again


def _webhook_followed(tx: dict[str, Any], now: int) -> bool:
    """A webhook came for a change the node had learned by asking: the provider's webhooks do
    reach the node (late). True when ``tx`` changed."""
    asked = tx.get("asked")
    if not asked or not asked.get("learned") or asked.get("webhookAt"):
        return False
    asked["webhookAt"] = now
    return True


def _late_money(tx: dict[str, Any], event: dict[str, Any]) -> dict[str, Any]:
    """The flag for money paid after the checkout ended, kept too as money a refund may give
    back (``tx["lateMoney"]``)."""
    amount = event.get("amount")
    if amount is not None and event.get("currency") == tx["currency"]:
        late = [m for m in tx.get("lateMoney") or () if m["eventId"] != event["id"]]
        tx["lateMoney"] = [*late, {"eventId": event["id"], "amount": amount}][-ATTENTION_MONEY:]
    return {
        "code": attention.PAID_LATE,
        "eventId": event["id"],
        "amount": amount,
        "currency": event.get("currency"),
    }


ATTENTION_MONEY = 20  # late payments remembered per transaction


def _money_flags(
    kind: EventType, event: NormalizedEvent, stored: dict[str, Any]
) -> list[dict[str, Any]]:
    """What a money event after the payment asks of the merchant (CONTRACT 4.3a): a refund
    that failed, a warning before a chargeback, a dispute opened, won or lost."""
    closing = (
        attention.DISPUTE_WON
        if event.payment_status == Status.SUCCEEDED
        else attention.DISPUTE_LOST
        if event.payment_status is not None
        else None
    )
    return _flags_for(
        kind, closing, stored, event.provider_refund.tag if event.provider_refund else None
    )


def _waited_flags(
    kind: EventType, match: dict[str, Any], event: dict[str, Any]
) -> list[dict[str, Any]]:
    payment = match.get("payment")
    closing = (
        attention.DISPUTE_WON
        if payment == Status.SUCCEEDED
        else attention.DISPUTE_LOST
        if payment is not None
        else None
    )
    return _flags_for(kind, closing, event, None)


def _flags_for(
    kind: EventType, closing: str | None, event: dict[str, Any], refund_id: str | None
) -> list[dict[str, Any]]:
    code = closing if kind == EventType.PAYMENT_DISPUTE_CLOSED else _MONEY_FLAGS.get(kind)
    if code is None:
        return []
    return [
        {
            "code": code,
            "eventId": event["id"],
            "amount": event.get("amount"),
            "currency": event.get("currency"),
            "refundId": refund_id,
        }
    ]


_REFUND_TYPES = (EventType.PAYMENT_REFUNDED, EventType.PAYMENT_PARTIALLY_REFUNDED)


def _refund_type(target: Status | None) -> EventType:
    return (
        EventType.PAYMENT_REFUNDED
        if target == Status.REFUNDED
        else EventType.PAYMENT_PARTIALLY_REFUNDED
    )


def _stored_type(
    event: NormalizedEvent,
    evt_id: str,
    tx: dict[str, Any] | None,
    settled: story.Settled | None,
    mismatched: bool,
    late: bool,
) -> EventType:
    if tx is None:
        return EventType.UNMATCHED
    if mismatched:
        return EventType.PAYMENT_AMOUNT_MISMATCH
    if late:
        return EventType.PAYMENT_PAID_LATE
    if settled is not None and evt_id in settled.targets:
        return _refund_type(settled.targets[evt_id])
    return event.type


def _entry(evt_id: str, event: NormalizedEvent, received_at: int) -> story.Entry | None:
    """The step of the story an event asks for; None when it asks for no move."""
    if (
        event.payment_status is None
        and event.subscription_status is None
        and not event.starts_subscription
        and event.refund is None
    ):
        return None
    step = Step(
        event_id=evt_id,
        at=event.occurred_at_ms if event.occurred_at_ms is not None else received_at,
        type=str(event.type),
        payment=event.payment_status,
        subscription=event.subscription_status,
        starts=event.starts_subscription,
        refund=event.refund,
        charged=event.charged_minor,
    )
    start = (
        {"ref": event.subscription_ref, "customer": event.provider_customer}
        if event.starts_subscription
        else None
    )
    return story.Entry(step, start, event.current_period_end_ms)


def _match_record(event: NormalizedEvent) -> dict[str, Any]:
    """What an unmatched event keeps for the day a later event links one of its ids: the step
    it asks for, and whether it reports money paid (checked against the transaction then)."""
    refund = event.refund
    return {
        "type": str(event.type),
        "payment": event.payment_status,
        "subscription": event.subscription_status,
        "starts": event.starts_subscription,
        "start": {"ref": event.subscription_ref, "customer": event.provider_customer}
        if event.starts_subscription
        else None,
        "periodEnd": event.current_period_end_ms,
        "linkRefs": list(event.link_refs),
        "refund": [refund.amount, refund.of] if refund else None,
        "charged": event.charged_minor,
        "change": event.change,
        "pays": _pays(event),
        "moves": _entry("", event, 0) is not None,
    }


def _waiting_entry(waited: dict[str, Any]) -> story.Entry | None:
    """The step of an event that waited unmatched, as it would have been had it matched at
    once; None when it asks for no move (a declined attempt: it only joins the history)."""
    match = waited["match"]
    if not match.get("moves", True):
        return None
    refund = match.get("refund")
    step = Step(
        event_id=waited["id"],
        at=waited["occurredAt"] if waited.get("occurredAt") is not None else waited["receivedAt"],
        type=match["type"],
        payment=Status(match["payment"]) if match.get("payment") else None,
        subscription=Status(match["subscription"]) if match.get("subscription") else None,
        starts=bool(match.get("starts")),
        refund=Refund(refund[0], refund[1]) if refund else None,
        charged=match.get("charged"),
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
