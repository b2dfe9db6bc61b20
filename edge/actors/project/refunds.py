"""Refunds of one project (CONTRACT 4.3a): what the merchant asks for, and what became of it.

A refund the merchant asks for is a record on its transaction (``tx["refunds"]``) and, for a
provider with a refund call, a durable follow-up in the same commit (the worker makes it once at
the provider: ``edge.providers.refunding``). Pay by mail records the money sent back by hand at
once, as a step of the story.

What is left to refund is ``edge.domain.refunds.refundable``: what was charged, less what the
provider reports given back (its webhooks and reads, refunds made in its own dashboard
included), less the node's refunds not yet reported. A request for more is ``409
refund_too_large``, with what is left.

A refund's record learns what became of it from two sides, whichever comes first:
- the worker (``RefundOutcome``): the provider's refund it made or adopted, a refusal for good,
  or no answer at all once the retries ended (``unknown``: the amount stays held);
- the provider's events (``observed``): a refund event names the node's refund id it is tagged
  with, or the provider refund id the record already holds.
Its state only moves forward (``_RANK``): an answer that comes after the webhook which reported
the money back does not take the record back to ``sent``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from edge.actors import messages as m
from edge.actors.project import story
from edge.actors.project.attention import flag
from edge.actors.project.idempotency import IdempotencyKeys, Resume
from edge.actors.project.ledger import Ledger, Reply
from edge.actors.records import refund_view
from edge.domain import attention, ids
from edge.domain import refunds as money_back
from edge.domain.changes import change_key, remember
from edge.domain.errors import InvalidInput
from edge.domain.events import SOURCE_NODE, EventType
from edge.domain.money import to_minor, to_wire
from edge.domain.status import ENDED, Kind, Status
from edge.errors import Conflict, InvalidRequest, InvalidTransition
from edge.providers.base import (
    REFUND,
    REFUND_FAILED,
    REFUND_PENDING,
    REFUND_SUCCEEDED,
    ProviderRefund,
)
from edge.providers.registry import PROVIDERS
from edge.store import outbox
from edge.store.engine import Op

log = logging.getLogger("edge.actors")

REFUNDS_KEPT = 50  # refund requests remembered per transaction

_STATE_OF = {
    REFUND_PENDING: money_back.SENT,
    REFUND_SUCCEEDED: money_back.SUCCEEDED,
    REFUND_FAILED: money_back.FAILED,
}
# a record's state only moves up this order
_RANK = {
    money_back.REQUESTED: 0,
    money_back.UNKNOWN: 1,
    money_back.SENT: 2,
    money_back.SUCCEEDED: 3,
    money_back.DONE: 3,
    money_back.FAILED: 4,
}
_PAID = (Status.SUCCEEDED, Status.PARTIALLY_REFUNDED)


class Refunds:
    def __init__(self, ledger: Ledger, idempotency: IdempotencyKeys) -> None:
        self.ledger = ledger
        self.idempotency = idempotency

    async def request(self, msg: m.RefundTx, reply: Reply) -> None:
        """Give money back for a paid transaction (CONTRACT 4.5), or for money paid after its
        checkout ended: pay by mail records it at once; a provider's refund call is owed from
        the durable queue, and the provider's report moves the transaction."""
        ledger = self.ledger
        tx = await ledger.visible_tx(msg.tx_id, msg.mode)  # another mode's: not found, keyed or not
        if msg.idempotency_key is not None:
            known = await self.idempotency.answer_known(msg, reply)
            assert not isinstance(known, Resume)  # a checkout's, in a namespace of its own
            if known:
                return  # the first request with this key answered (or will answer) this one
        charged = _charged(tx)
        if charged is None:
            raise InvalidTransition(
                "invalid_transition",
                f"The transaction is {tx['status']}; only a paid one can be refunded.",
                extra={"status": tx["status"]},
            )
        provider = PROVIDERS[tx["provider"]]
        if not provider.refunds or tx["kind"] != Kind.PAYMENT:
            raise Conflict(
                "refund_unsupported",
                f"Refund this {tx['kind']} in {provider.default_label}'s own dashboard: the"
                " node refunds one-off payments of providers with a refund call.",
            )
        if msg.reason is not None:
            unfit = provider.refund_reason_problem(msg.reason)
            if unfit is not None:
                raise InvalidRequest("invalid_request", unfit, field="reason")
        mode = "test" if tx["isTest"] else "live"
        if provider.name != "manual":
            ledger.configured(provider.name, mode)  # provider_not_enabled while it is off
        reported = story.reported(tx)
        left = money_back.refundable(charged, reported, node_refunds(tx))
        try:
            amount = left if msg.amount is None else to_minor(msg.amount, tx["currency"])
        except InvalidInput as wrong:
            # the transaction's currency decides: 422, the request alone was well formed
            raise InvalidTransition("invalid_amount", wrong.message, field="amount") from None
        if not 0 < amount <= left:
            raise Conflict(
                "refund_too_large",
                f"At most {to_wire(left, tx['currency'])} {tx['currency']} is left to refund"
                " (refunds the provider reports, and those asked for and not yet reported,"
                " count).",
                field="amount",
                extra={"refundable": to_wire(left, tx["currency"])},
            )
        problem = provider.price_problem(amount, tx["currency"], "refund")
        if problem is not None and problem.field != "name":
            raise InvalidTransition("invalid_amount", f"{problem.rule}.", field="amount")
        now = ledger.now_ms()
        refund_id = f"rf_{ids.new_ulid()}"
        refund: dict[str, Any] = {
            "id": refund_id,
            "amount": amount,
            "reason": msg.reason,
            "requestedAt": now,
        }
        ops: list[Op] = []
        if provider.name == "manual":
            await story.node_refund(ledger, tx, refund_id, amount, ops, refundId=refund_id)
            refund["state"] = money_back.DONE
        else:
            untouched = reported.given_back == 0 and not tx.get("refunds")
            entry = outbox.enqueue_ops(
                ledger.project_id,
                tx["id"],
                provider.name,
                mode,
                REFUND,
                {
                    "refundId": refund_id,
                    "amount": amount,
                    "reason": msg.reason,
                    # all of it: the provider's own "full" refund (Paddle's type full gives
                    # back what it charged, tax and all)
                    "whole": amount == charged and untouched,
                    # what the provider may give back in all: checked against its own list
                    "charged": charged,
                },
                now,
            )
            refund["entryId"] = outbox.entry_id_of(entry)
            refund["state"] = money_back.REQUESTED
            ops += entry
        records = [*(tx.get("refunds") or ()), refund]
        places = money_back.kept(_node_refunds(records), story.reported(tx), REFUNDS_KEPT)
        tx["refunds"] = [records[i] for i in places]
        ops += ledger.tx_ops(tx)
        view = refund_view(tx, refund)
        if msg.idempotency_key is not None:
            kept, reply = await self.idempotency.keep(msg, reply, tx["id"], view)
            ops += kept
        ledger.commit(ops, reply, view)

    async def outcome(self, msg: m.RefundOutcome, reply: Reply) -> None:
        """The worker's word on a refund: recorded (and, when it failed, flagged and told to
        the merchant) before the worker settles its entry."""
        ledger = self.ledger
        tx = await ledger.tx(msg.tx_id)
        refund = _find(tx, msg.refund_id) if tx is not None else None
        if tx is None or refund is None:
            reply({"recorded": False})  # the record is gone (pruned): nothing to keep
            return
        ops: list[Op] = []
        if msg.outcome == m.REFUND_MADE:
            made: ProviderRefund = msg.refund
            _adopt(refund, made)
            failed = _advance(refund, _STATE_OF.get(made.state, money_back.SENT), msg.detail)
        elif msg.outcome == m.REFUND_REFUSED:
            failed = _advance(refund, money_back.FAILED, msg.detail)
        else:
            _advance(refund, money_back.UNKNOWN, msg.detail)
            failed = False
        if _state(refund) == money_back.UNKNOWN and msg.outcome == m.REFUND_UNKNOWN:
            # not when the provider's own word (a webhook) settled it first
            flag(tx, [_flag(attention.REFUND_UNKNOWN, refund, tx)])
            if PROVIDERS[tx["provider"]].sync is not None:
                # the provider never answered: the node asks it what became of the refund
                now = ledger.now_ms()
                ops += outbox.enqueue_ops(
                    ledger.project_id,
                    tx["id"],
                    tx["provider"],
                    "test" if tx["isTest"] else "live",
                    outbox.SYNC,
                    {},
                    now,
                    due_ms=now + int(ledger.ctx.settings.sync_every_s * 1000),
                )
        if failed and not _told_before(tx, refund, evt_id := ids.new_evt_id()):
            # the provider told the node itself: the merchant hears of it like a webhook's
            ops += ledger.event(
                tx,
                EventType.PAYMENT_REFUND_FAILED,
                id=evt_id,
                amount=refund["amount"],
                source=SOURCE_NODE,
                refundId=refund["id"],
            )
            flag(tx, [{**_flag(attention.REFUND_FAILED, refund, tx), "eventId": evt_id}])
        ops += ledger.tx_ops(tx)
        ledger.commit(ops, reply, {"recorded": True})

    def observed(self, tx: dict[str, Any], seen: ProviderRefund) -> bool:
        """A provider event names a refund: the node's own refund it is (by its tag, or by the
        provider id the record holds) learns its provider id and state. True when the record
        changed (the caller writes the transaction)."""
        for refund in tx.get("refunds") or ():
            ours = seen.tag == refund["id"] or (
                refund.get("providerRefundId") is not None
                and refund.get("providerRefundId") == seen.id
            )
            if ours:
                before = dict(refund)
                _adopt(refund, seen)
                _advance(refund, _STATE_OF.get(seen.state, money_back.SENT), seen.detail)
                return refund != before
        return False


def _told_before(tx: dict[str, Any], refund: dict[str, Any], evt_id: str) -> bool:
    """Was the refund's failure told already? Else ``evt_id`` is kept as its telling under the
    change the provider's own report of it names (``payment.refund_failed:<its refund id>``),
    so that report, come late (a held webhook, what a sync reads), is its repeat: one
    change, one event."""
    made = refund.get("providerRefundId")
    if not made:
        return False  # refused before the provider made anything: nothing of its will come
    key = change_key(EventType.PAYMENT_REFUND_FAILED, refund_of=str(made))
    return key is not None and remember(tx.setdefault("changes", {}), key, evt_id) is not None


def node_refunds(tx: dict[str, Any]) -> list[money_back.NodeRefund]:
    """The transaction's refund records, as ``edge.domain.refunds`` counts them."""
    return _node_refunds(tx.get("refunds") or ())


def _node_refunds(records: Iterable[dict[str, Any]]) -> list[money_back.NodeRefund]:
    return [
        money_back.NodeRefund(
            amount=int(r["amount"]),
            state=_state(r),
            provider_id=r.get("providerRefundId"),
            provider_created_ms=r.get("providerCreatedAt"),
        )
        for r in records
    ]


def refundable(tx: dict[str, Any]) -> int | None:
    """What is left to refund of the transaction; None when it was never paid."""
    charged = _charged(tx)
    if charged is None:
        return None
    return money_back.refundable(charged, story.reported(tx), node_refunds(tx))


def _charged(tx: dict[str, Any]) -> int | None:
    """What the buyer paid, that a refund may give back: what a paid checkout charged, or the
    money that arrived after the checkout ended (``lateMoney``); None when nothing was paid."""
    if tx["status"] in _PAID:
        return story.charged(tx)
    if tx["status"] in ENDED and tx.get("lateMoney"):
        return sum(int(late["amount"]) for late in tx["lateMoney"])
    return None


def _state(refund: dict[str, Any]) -> str:
    """The record's state; a record from before states were kept says ``requested`` while its
    queue entry tells the rest (``edge.actors.queries``)."""
    return str(refund.get("state") or money_back.REQUESTED)


def _find(tx: dict[str, Any], refund_id: str) -> dict[str, Any] | None:
    return next((r for r in tx.get("refunds") or () if r["id"] == refund_id), None)


def _adopt(refund: dict[str, Any], seen: ProviderRefund) -> None:
    refund["providerRefundId"] = seen.id
    if seen.created_ms is not None and refund.get("providerCreatedAt") is None:
        refund["providerCreatedAt"] = seen.created_ms


def _advance(refund: dict[str, Any], state: str, detail: str) -> bool:
    """Move the record to ``state`` if that is forward (at the same state, the provider's
    latest words are kept); True when it moved to ``failed``."""
    rank, now = _RANK[state], _RANK.get(_state(refund), 0)
    if rank < now:
        return False
    if detail:
        refund["detail"] = detail[:500]
    if rank == now:
        return False
    refund["state"] = state
    return state == money_back.FAILED


def _flag(code: str, refund: dict[str, Any], tx: dict[str, Any]) -> dict[str, Any]:
    return {
        "code": code,
        "refundId": refund["id"],
        "amount": refund["amount"],
        "currency": tx["currency"],
        "detail": refund.get("detail"),
    }
