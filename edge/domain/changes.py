"""One change, one event (CONTRACT 4.3a), without I/O.

Providers report one change of a payment in several events: Paddle's ``transaction.paid`` and
then ``transaction.completed``, Stripe's session and payment intent events, the provider's own
``transaction.created`` beside the node's ``checkout.created``, and a webhook for a change the
node already learned by asking the provider. A merchant's fulfilment job acts on each
``payment.succeeded`` it is told of, so each change is told once: the first event that reports
it is the change; a later one is kept in the transaction's history with ``duplicateOf`` naming
the first, and is not notified.

A change is named by a key (``change_key``):

- what happens once in a checkout's life is keyed by its type alone: created, processing,
  succeeded, failed, expired, canceled, marked paid, its subscription created; a
  ``payment.processing`` that moves no status (BTCPay's payment received, part or whole,
  before the invoice is processing; PayPal's approved order) is a change of its own beside the
  move, so the move is told whichever comes first (a provider's own ``checkout.created`` stays
  a repeat of the node's);
- a refund by the provider's refund id (a total "refunded so far" by the total), a refund that
  failed by the refund's id, a dispute, its warning and its closing by what the adapter names
  (the dispute's id) or else by type and amount;
- money paid late or not as asked, by its amount;
- a subscription's status change by the status and the subscription's version it made;
- a renewal's payment only by what the adapter names (the renewal's invoice or transaction):
  without a name, every event is its own change.
"""

from __future__ import annotations

from .events import EventType

E = EventType

ONCE: frozenset[str] = frozenset(
    {
        E.CHECKOUT_CREATED,
        E.PAYMENT_PROCESSING,
        E.PAYMENT_SUCCEEDED,
        E.PAYMENT_FAILED,
        E.CHECKOUT_EXPIRED,
        E.CHECKOUT_CANCELED,
        E.MANUAL_MARKED_PAID,
        E.SUBSCRIPTION_CREATED,
    }
)
_REFUNDS = frozenset({E.PAYMENT_REFUNDED, E.PAYMENT_PARTIALLY_REFUNDED})
_BY_AMOUNT = frozenset(
    {
        E.PAYMENT_DISPUTED,
        E.PAYMENT_DISPUTE_CLOSED,
        E.PAYMENT_DISPUTE_WARNING,
        E.PAYMENT_PAID_LATE,
        E.PAYMENT_AMOUNT_MISMATCH,
    }
)
_SUBSCRIPTION_STATUS = frozenset(
    {E.SUBSCRIPTION_UPDATED, E.SUBSCRIPTION_PAST_DUE, E.SUBSCRIPTION_CANCELED}
)


def change_key(
    event_type: str,
    *,
    named: str | None = None,
    refund_of: str | None = None,
    amount: int | None = None,
    currency: str | None = None,
    sub_status: str | None = None,
    sub_version: int | None = None,
    moves: bool = True,
) -> str | None:
    """The key of the change an event of ``event_type`` (the type it is stored under) reports;
    None when it is a change of its own whatever came before (a declined attempt, an event that
    matched nothing, a renewal the adapter did not name). ``named`` is the adapter's own name
    for the change (``NormalizedEvent.change``), which wins where one is given."""
    if event_type == E.UNMATCHED:
        return None
    if event_type in _REFUNDS:
        # full or partial is the node's word for the sum so far, not part of the change
        return f"refund:{refund_of}" if refund_of else f"refund-total:{amount}"
    if named:
        return f"{event_type}:{named}"
    if event_type == E.PAYMENT_PROCESSING and not moves:
        return f"{event_type}:no-move"
    if event_type in ONCE:
        return str(event_type)
    if event_type == E.PAYMENT_REFUND_FAILED:
        return f"{event_type}:{refund_of or amount}"
    if event_type in _BY_AMOUNT:
        return f"{event_type}:{amount}:{currency}"
    if event_type in _SUBSCRIPTION_STATUS and sub_status is not None:
        return subscription_key(sub_status, sub_version)
    return None


SUBSCRIPTION_KEY = "subscription:"  # the keys of subscription status changes begin so


def subscription_key(status: str, version: int | None) -> str:
    """The key of a subscription's move to ``status`` at ``version``."""
    return f"{SUBSCRIPTION_KEY}{status}@{version}"


def by_subscription_status(event_type: str, named: str | None) -> bool:
    """Is an event of ``event_type`` a change of its subscription's status (not one the
    adapter names)?"""
    return event_type in _SUBSCRIPTION_STATUS and not named


def told_subscription_changes(changes: dict[str, str]) -> set[str]:
    """The events that told a subscription status change."""
    return {first for key, first in changes.items() if key.startswith(SUBSCRIPTION_KEY)}


def tell_subscription_change(
    changes: dict[str, str], status: str, version: int, evt_id: str
) -> None:
    """Keep ``evt_id`` as the event that told the subscription's move to ``status`` at
    ``version`` (beside one kept for that version before a late step moved it on)."""
    key = subscription_key(status, version)
    if changes.get(key, evt_id) != evt_id:
        key = f"{key}:{evt_id}"
    remember(changes, key, evt_id)


# Changes remembered per transaction (``changes``: key -> the event that told it).
KEPT = 400


def remember(changes: dict[str, str], key: str, evt_id: str) -> str | None:
    """The event already kept under ``key``; else ``evt_id`` is kept under it (the oldest
    forgotten past ``KEPT``) and None."""
    if key in changes:
        return str(changes[key])
    changes[key] = evt_id
    while len(changes) > KEPT:
        changes.pop(next(iter(changes)))
    return None
