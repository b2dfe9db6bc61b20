"""What a transaction needs its merchant for (CONTRACT 2, 4.3a): its flags, and marking them
handled.

A flag (``tx["attention"]``) is a code of ``edge.domain.attention`` with the event that raised
it and, where money is concerned, its amount; ``needsAttention`` is true while any is open. The
merchant marks them handled (``POST .../transactions/{txId}/resolve {note}``): the open flags
move to ``handled`` with who, when and the note, ``needsAttention`` clears, and the act is an
event of its own (``payment.resolved``) in the history and the merchant's notifications. A flag
raised later opens the transaction again.
"""

from __future__ import annotations

from typing import Any

from edge.actors import messages as m
from edge.actors.project.ledger import Ledger, Reply
from edge.actors.records import transaction_view
from edge.domain import ids
from edge.domain.events import SOURCE_NODE, EventType
from edge.errors import Conflict
from edge.store.engine import Op

# Flags on one transaction: enough for its story, bounded so a flood of odd events cannot grow it.
ATTENTION_KEPT = 20
HANDLED_KEPT = 20  # marked handled, newest last


def flag(tx: dict[str, Any], flags: list[dict[str, Any]]) -> bool:
    """Flag ``tx`` for the merchant with ``flags`` (each kept once, by code and event, or by
    code and refund); True when it changed. A flag the merchant marked handled stays handled:
    a repeat of the change it was raised for (asking the provider, its second event) does not
    raise it again."""
    kept = list(tx.get("attention") or [])
    handled = (f for done in tx.get("handled") or () for f in done.get("flags") or ())
    known = {_identity(f) for f in (*kept, *handled)}
    changed = False
    for new in flags:
        if _identity(new) in known:
            continue
        known.add(_identity(new))
        changed = True
        if len(kept) < ATTENTION_KEPT:  # past that, the merchant is still told to look
            kept.append({k: v for k, v in new.items() if v is not None})
    if not changed:
        return False
    tx["needsAttention"] = True
    tx["attention"] = kept
    return changed


def _identity(flag: dict[str, Any]) -> tuple[Any, ...]:
    return (flag["code"], flag.get("eventId"), flag.get("refundId"))


class Attention:
    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger

    async def resolve(self, msg: m.ResolveTx, reply: Reply) -> None:
        """Mark what the transaction needed the merchant for handled."""
        ledger = self.ledger
        tx = await ledger.visible_tx(msg.tx_id, msg.mode)
        if not tx.get("needsAttention"):
            raise Conflict(
                "nothing_to_resolve",
                "Nothing about this transaction waits for you: it needs no attention.",
            )
        now = ledger.now_ms()
        evt_id = ids.new_evt_id()
        handled = {
            "at": now,
            "by": msg.by,
            "note": msg.note,
            "eventId": evt_id,
            "flags": list(tx.get("attention") or ()),
        }
        tx["handled"] = [*(tx.get("handled") or ())[-(HANDLED_KEPT - 1) :], handled]
        tx["attention"] = []
        tx["needsAttention"] = False
        ops: list[Op] = ledger.event(
            tx,
            EventType.PAYMENT_RESOLVED,
            id=evt_id,
            source=SOURCE_NODE,
            note=msg.note,
            resolvedBy=msg.by,
        )
        ops += ledger.tx_ops(tx)
        ledger.commit(ops, reply, transaction_view(tx))
