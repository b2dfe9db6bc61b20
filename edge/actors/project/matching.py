"""Which transaction a provider event is about (CONTRACT 4.3): the one matching rule, shared by
every provider.

An event moves a transaction only when it names a provider object the node itself linked to
that transaction: the object it created at checkout (Stripe's Checkout Session, PayPal's order
or subscription, Paddle's transaction, BTCPay's invoice; recorded when the provider answered),
or one the provider tied to it since (the payment intent of that session, a capture of that
order, the subscription that checkout started). A field the merchant or the buyer can set on
another payment (``client_reference_id``, ``custom_id``, ``custom_data``, ``orderId``,
metadata) is never enough: someone who pays a small amount elsewhere while echoing a big
checkout's id must not complete it. Such an event is stored unmatched, with the id it claimed.

An event that names no linked object yet waits under each provider id it names (a dispute
naming a charge before the payment linked it); when a later event, or the provider's answer to
the checkout call, links one of them, the waiting events are matched and folded in.
"""

from __future__ import annotations

from typing import Any

from edge.actors.project.ledger import Ledger
from edge.providers.base import NormalizedEvent
from edge.store import keys
from edge.store.engine import Op

WAITING_KEPT = 50  # unmatched events waiting under one provider id


class Matching:
    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger

    async def match(
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

    async def claimed(self, event: NormalizedEvent) -> str | None:
        """The id of this project's transaction that an unmatched event echoes, if any: a
        payment made elsewhere that names one of the node's checkouts."""
        if event.tx_id is None:
            return None
        return event.tx_id if await self.ledger.tx(event.tx_id) is not None else None

    async def link(
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

    async def wait(self, provider: str, event: NormalizedEvent, evt_id: str) -> list[Op]:
        """The writes that keep an unmatched event waiting under each provider id it names."""
        ops: list[Op] = []
        for ref in refs_of(event):
            earlier = (await self.ledger.lookup(keys.WAITING, provider, ref) or "").split()
            waiting = [*earlier[-(WAITING_KEPT - 1) :], evt_id]
            ops.append(self.ledger.index_op(keys.WAITING, provider, ref, " ".join(waiting)))
        return ops


def refs_of(event: NormalizedEvent) -> tuple[str, ...]:
    """The provider ids an event may be matched by."""
    refs = (*event.refs, event.subscription_ref) if event.subscription_ref else event.refs
    return tuple(dict.fromkeys(refs))
