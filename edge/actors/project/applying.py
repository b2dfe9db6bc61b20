"""Applying a provider's event to the project, in one walk: deduplicate by each of the event's
``dedup_ids`` in its mode -> match it to a transaction by the provider objects the node linked
to it -> check the money it reports against the transaction's amount and currency (a mismatch
moves nothing and flags the transaction) -> fold it into the transaction's story (``story``:
never backwards, refunds summed by amount), with the events that waited for what it links ->
store it with its customerRef, its flags and its durable follow-ups -> count it. The caller
commits the writes and replies after the commit.

Every way an event arrives takes this walk: a verified delivery (``intake``), a provider's
answer to a follow-up (``intake.reported``), what asking the provider found (``asking``), and
the checkout call's answer linking the events that came before it (``checkout``). What the
event's records say is computed in ``event_records`` (pure); the state is the ledger's.

The matching rule (CONTRACT 4.3), one for every provider: an event moves a transaction only
when it names a provider object the node itself linked to that transaction: the object it
created at checkout (Stripe's Checkout Session, PayPal's order or subscription, Paddle's
transaction, BTCPay's invoice; recorded when the provider answered), or one the provider tied
to it since (the payment intent of that session, a capture of that order, the subscription that
checkout started). A field the merchant or the buyer can set on another payment
(``client_reference_id``, ``custom_id``, ``custom_data``, ``orderId``, metadata) is never
enough: someone who pays a small amount elsewhere while echoing a big checkout's id must not
complete it. Such an event is stored unmatched, with the id it claimed.

An event that names no linked object yet waits under each provider id it names (a dispute
naming a charge before the payment linked it); when a later event, or the provider's answer to
the checkout call, links one of them, the waiting events are matched and folded in.
"""

from __future__ import annotations

import hashlib
import logging
from typing import Any

from edge.actors.project import event_records as records
from edge.actors.project import story
from edge.actors.project.attention import flag
from edge.actors.project.ledger import Ledger
from edge.actors.project.quota import Quota
from edge.actors.project.refunds import Refunds
from edge.domain import attention, ids
from edge.domain.convergence import Fate, Step
from edge.domain.events import QUOTA_EXEMPT, SOURCE_SYNC, SOURCE_WEBHOOK, EventType
from edge.domain.quota import period_of
from edge.domain.refunds import reported as refunds_reported
from edge.domain.status import Kind, Status
from edge.errors import InvalidRequest
from edge.providers.base import MalformedPayload, NormalizedEvent, Provider
from edge.store import keys
from edge.store.engine import Op

log = logging.getLogger("edge.actors")

LEARNED = frozenset({"accepted", "amount_mismatch"})  # a change of a transaction, told now
WAITING_KEPT = 50  # unmatched events waiting under one provider id


class EventApplier:
    def __init__(self, ledger: Ledger, quota: Quota, refunds: Refunds) -> None:
        self.ledger = ledger
        self.quota = quota
        self.refunds = refunds
        self._told_waited = 0  # waited events told by the last deliveries (``take_all``)

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
            bounded = [records.bounded(event) for event in events]
        except MalformedPayload as exc:
            raise InvalidRequest("malformed_payload", str(exc)) from None
        self._told_waited = 0
        answers = [await self.take(provider, mode, event, body, ops, source) for event in bounded]
        told = [answer for answer, outcome in answers if outcome in LEARNED]
        # and the events that waited unmatched until these linked them, told now
        return told + [{"matched": True}] * self._told_waited

    async def take(
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
        tx = await self._match(provider.name, mode, event)
        mismatched = tx is not None and records.mismatched(event, tx)
        settled: story.Settled | None = None
        flags: list[dict[str, Any]] = []
        given_back = 0
        status_before = tx["status"] if tx is not None else None
        if tx is not None:
            # what was given back before: read only for a refund's change (records.change)
            given_back = story.reported(tx).given_back if event.refund is not None else 0
            entry = None if mismatched else records.entry(evt_id, event, now)
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
        stored_type = records.stored_type(event, evt_id, tx, settled, mismatched, late)
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
            repeated = settled.repeats.get(evt_id) if settled else None
            if repeated is not None:  # a step the story has: history on whoever told it
                told = await self.ledger.teller(repeated)
            else:
                run = settled.sub_runs.get(evt_id) if settled else None
                told, recorded = records.change(
                    tx, stored_type, event, evt_id, sub, given_back, run
                )
            first = await ledger.event_type(told) if told is not None else None
            if first is not None:
                # a repeat is stored as what it repeats (a refund's full or partial word was
                # earned by the first report)
                stored_type = EventType(first)
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
            "status": records.status_after(event, tx, sub),
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
        if tx is not None and stored_type in records.REFUND_TYPES:
            # all that was given back once this one is counted, beside the refund's own amount
            stored["refunded"] = story.reported(tx).given_back
        if told is not None:
            # a change already told: history on the transaction, not a second event told
            stored["duplicateOf"] = told
        if event.unreadable_amount is not None:
            stored["providerAmount"] = event.unreadable_amount
        if tx is None:
            claimed = await self._claimed(event)
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
            stored["match"] = records.match_record(event)
            ops += await self._wait(provider.name, event, evt_id)
        else:
            if mismatched:
                stored.update(expectedAmount=tx["amount"], expectedCurrency=tx["currency"])
                # on the change it tells: a repeat of it (asking, the provider's second event)
                # is the same flag, not another
                flags.append(records.mismatch_flag({**stored, "id": told or evt_id}))
            if event.attention:
                # a repeat's own word counts too, on the change it repeats: which telling
                # carries it must not decide whether the merchant hears of it
                flags.append(records.own_flag(event, told or evt_id))
            if told is None:
                if late:
                    flags.append(records.late_money(tx, stored))
                flags += records.money_flags(stored_type, event, stored)
            observed = event.provider_refund is not None and self.refunds.observed(
                tx, event.provider_refund
            )
            followed = (
                told is not None and source == SOURCE_WEBHOOK and records.webhook_followed(tx, now)
            )
            # a payment the node must still take (PayPal's approved order, to be captured):
            # its checkout's end waits for it (``checkout.expire``)
            owes = bool(event.follow_ups) and not mismatched and not tx.get("owedAt")
            if owes:
                tx["owedAt"] = now
            if flag(tx, flags) or observed or recorded or followed or owes:
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
            records.asked_learned(tx, now)
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
        waited = await self._link(provider, tx, refs, ops)
        rematched = [
            (w, True, None)
            if records.waited_mismatched(w, tx)
            else (w, False, records.waiting_entry(w))
            for w in waited
        ]
        folded = [entry for _, _, entry in rematched if entry is not None]
        settled = await story.settle(ledger, tx, [*entries, *folded], ops)
        # money that came late is flagged with its amount where each event is stored: the
        # new ones by the caller, the ones that waited below, and the ones taken before an
        # end dated earlier came here
        flags: list[dict[str, Any]] = []
        if settled.in_time and records.withdraw_late(tx, settled.in_time):
            ops += ledger.tx_ops(tx)
        for evt_id in sorted(settled.overtaken):
            taken = await ledger.stored_event(evt_id)
            named = next((e.get("n") for e in tx["story"] if e["e"] == evt_id), None)
            if taken is not None and records.late_change(tx, taken, named) in (None, evt_id):
                flags.append(records.late_money(tx, taken))
        if settled.contradicted:
            flags.append({"code": attention.CONTRADICTED})
        if not rematched:
            return settled, flags
        now = ledger.now_ms()
        # the money each waited refund adds is counted from what was known without them
        waited_ids = {w["id"] for w, _, _ in rematched}
        known = [step for step in story.refund_steps(tx) if step.event_id not in waited_ids]
        # the changes the fold applied first: one it did not apply repeats the change the
        # subscription is in, told by then (``records.waited_change``)
        applied_first = sorted(rematched, key=lambda w: w[0]["id"] not in settled.sub_runs)
        told_before = dict(tx.get("changes") or {})
        new_ids = {e.step.event_id for e in entries}
        new_refunds = [e.step.event_id for e in entries if e.step.refund is not None]
        for event, mismatched, entry in applied_first:
            event_id, match = event["id"], event["match"]
            event = {k: v for k, v in event.items() if k != "match"}
            fate = settled.fates.get(event_id) if entry is not None else Fate.APPLIED
            if mismatched:
                event.update(expectedAmount=tx["amount"], expectedCurrency=tx["currency"])
                kind = EventType.PAYMENT_AMOUNT_MISMATCH
            elif event_id in settled.late:
                kind = EventType.PAYMENT_PAID_LATE
            elif event_id in settled.targets:
                kind = records.refund_type(settled.targets[event_id])
            else:
                kind = EventType(match["type"])
            event.update(
                type=str(kind),
                txId=tx["id"],
                subscriptionId=tx.get("subscriptionId"),
                status=tx["status"],
                version=tx["version"],  # told now, as the record now is
                customerRef=tx.get("customerRef"),
                metadata=dict(tx.get("metadata") or {}),
                matchedAt=now,
                appliedAt=now if fate is Fate.APPLIED and not mismatched else None,
            )
            repeated = settled.repeats.get(event_id)
            first: str | None
            if repeated is not None:
                # a step the story has (the new event's, one that waited with it or a kept
                # one): history on whoever told it
                first = repeated if repeated in new_ids else await self.ledger.teller(repeated)
            elif kind in (EventType.PAYMENT_REFUNDED, EventType.PAYMENT_PARTIALLY_REFUNDED):
                before = refunds_reported(known).given_back
                known.append(entry.step if entry is not None else Step(event_id, 0, str(kind)))
                after = refunds_reported(known).given_back
                first = records.refund_change(tx, event_id, before, after)
                if first is None and after <= before:
                    # it adds nothing to the money the new event reports, which is told next
                    first = next(iter(new_refunds), None)
            else:
                run = settled.sub_runs.get(event_id)
                first = records.waited_change(tx, kind, match, event, settled.sub, run)
            # as for an event the node matched when it came (``take``): on the change it tells
            if mismatched:
                flags.append(records.mismatch_flag({**event, "id": first or event_id}))
            if match.get("attention"):
                flags.append({"code": match["attention"], "eventId": first or event_id})
            if first is not None:
                event["duplicateOf"] = first
                ops += ledger.event_ops(event)
                continue
            self._told_waited += 1
            if source == SOURCE_SYNC:
                records.asked_learned(tx, now)
            if kind is EventType.PAYMENT_PAID_LATE:
                flags.append(records.late_money(tx, event))
            flags += records.waited_flags(kind, match, event)
            # told now, as what it turned out to be (it was told as unmatched only to the
            # endpoints that take unmatched events)
            ops += ledger.new_event_ops(event)
        if tx.get("changes") != told_before:
            ops += ledger.tx_ops(tx)  # the changes they told, kept (the fold's write was before)
        return settled, flags

    # -- matching ---------------------------------------------------------------------

    async def _match(
        self, provider: str, mode: str, event: NormalizedEvent
    ) -> dict[str, Any] | None:
        """The transaction of the first provider object the event names that the node linked;
        None when there is none (or it is another provider's or mode's)."""
        ledger = self.ledger
        for ref in refs_of(event):
            linked = await ledger.lookup(keys.PROVIDER_REF, provider, ref)
            if linked is None:
                continue
            if linked.startswith("sub_"):
                sub = await ledger.subscription(linked)
                linked = sub["txId"] if sub else None
            tx = await ledger.tx(linked) if linked else None
            if tx is not None:
                # an event of another provider or of the other mode never touches it
                if tx["provider"] != provider or tx["isTest"] != (mode == "test"):
                    return None
                return tx
        return None

    async def _claimed(self, event: NormalizedEvent) -> str | None:
        """The id of this project's transaction that an unmatched event echoes, if any: a
        payment made elsewhere that names one of the node's checkouts."""
        if event.tx_id is None:
            return None
        return event.tx_id if await self.ledger.tx(event.tx_id) is not None else None

    async def _link(
        self, provider: str, tx: dict[str, Any], refs: tuple[str, ...], ops: list[Op]
    ) -> list[dict[str, Any]]:
        """Remember ``refs`` for ``tx``; the stored events that waited under one of them (of
        the transaction's mode) are returned, oldest first, and what they link is linked in
        turn."""
        ledger = self.ledger
        found: list[dict[str, Any]] = []
        todo = list(refs)
        while todo:
            ref = todo.pop(0)
            if await ledger.lookup(keys.PROVIDER_REF, provider, ref) == tx["id"]:
                continue
            ops.append(ledger.index_op(keys.PROVIDER_REF, provider, ref, tx["id"]))
            waiting = await ledger.lookup(keys.WAITING, provider, ref)
            if waiting is None:
                continue
            left = []  # the other mode's events keep waiting
            for evt_id in waiting.split():
                waited = await ledger.stored_event(evt_id)
                if waited is None or waited.get("txId") or "match" not in waited:
                    continue  # pruned, or matched already under another of its ids
                if waited["isTest"] != tx["isTest"]:
                    left.append(evt_id)
                elif all(evt_id != w["id"] for w in found):
                    found.append(waited)
                    todo += waited["match"].get("linkRefs", [])
            ops.append(
                ledger.index_op(keys.WAITING, provider, ref, " ".join(left))
                if left
                else ledger.unindex_op(keys.WAITING, provider, ref)
            )
        return found

    async def _wait(self, provider: str, event: NormalizedEvent, evt_id: str) -> list[Op]:
        """The writes that keep an unmatched event waiting under each provider id it names."""
        ops: list[Op] = []
        for ref in refs_of(event):
            earlier = (await self.ledger.lookup(keys.WAITING, provider, ref) or "").split()
            waiting = [*earlier[-(WAITING_KEPT - 1) :], evt_id]
            ops.append(self.ledger.index_op(keys.WAITING, provider, ref, " ".join(waiting)))
        return ops


def _dedup_space(provider: str, mode: str) -> str:
    """Where a mode's dedup ids are kept: a test-signed event never shadows a live one. Live
    events keep the provider's own name, as every node before the split did."""
    return provider if mode == "live" else f"{provider}/test"


async def _mode_of(ledger: Ledger, evt_id: str) -> str | None:
    event = await ledger.stored_event(evt_id)
    if event is None:
        return None
    return "test" if event.get("isTest") else "live"


def refs_of(event: NormalizedEvent) -> tuple[str, ...]:
    """The provider ids an event may be matched by."""
    refs = (*event.refs, event.subscription_ref) if event.subscription_ref else event.refs
    return tuple(dict.fromkeys(refs))
