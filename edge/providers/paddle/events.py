"""Paddle Billing events in the node's terms (CONTRACT 6, PROVIDERS.md "Event mapping"): the
table and a reader per entity (transaction, subscription, adjustment).

``EVENT_TABLE`` says what an event *means*, for a Paddle type and a variant read from its
``data``; the readers say what it *refers to*: the node's transaction id (``custom_data.txId``,
which the node set), Paddle ids to match and link, amount, customer, subscription. Types not in
the table are stored as history (``UNMATCHED``, no status move) and answered 200, so Paddle does
not retry them for ever. ``read`` makes the event of an entity as a webhook of a given type
would carry it: ``normalize`` reads webhooks with it, and ``sync`` the entities it asks for, so
that both name the same change.

Paddle facts that shape it:
- One transaction entity stands for a checkout (``origin`` web or api) and for each renewal of
  the subscription it starts (``origin`` subscription_recurring); the origin is the variant.
  Paddle copies the subscription's ``custom_data`` to its renewals, so they carry the txId of
  the checkout that started it. A renewal's ``transaction.paid`` and ``transaction.completed``
  are one change, named by the renewal's own ``txn_`` (``NormalizedEvent.change``).
- ``transaction.paid`` may come before Paddle has made the subscription (``subscription_id``
  "might not yet" be set); ``transaction.completed`` and ``subscription.created`` carry it.
  Whichever of them names the ``sub_`` first starts the subscription.
- Adjustments (refunds, chargebacks) carry no ``custom_data``: they match by
  ``transaction_id`` alone, which the node linked when it created the transaction. Each names
  its change by its own ``adj_`` id.
- A refund counts once Paddle has approved it (``adjustment.updated``, status approved), for
  what it gives back (``totals.total``, "Total after tax"): the node sums refunds, because
  ``type`` is no guide (null in Paddle's own SDK fixtures, ``partial`` by default, and a whole
  refund may be made by items). One Paddle rejects on review (``adjustment.updated``, status
  rejected: "On review, they move to approved or rejected", openapi.yaml
  ``adjustment.updated``) is ``payment.refund_failed``: it gave nothing back. Every refund
  event carries the refund as Paddle holds it (``provider_refund``, with the node's refund id
  read from its ``reason``: ``adjustments``).
- Chargebacks: "Where customers raise a chargeback with their payment method issuer, Paddle
  automatically creates an adjustment to refund the disputed amount"
  (developer.paddle.com/api-reference/adjustments/overview), and "the funds are withdrawn ...
  We then deduct both the transaction amount and the fee from your supplier account balance"
  (paddle.com/help/manage/risk-prevention/understanding-chargebacks-with-paddle). So a
  ``chargeback`` is ``payment.disputed`` for its own amount (a chargeback may be for part of
  the payment) and that amount counts as given back (``refund``, under the adjustment's id):
  the merchant cannot refund it again. ``chargeback_reverse`` ("created by Paddle when Paddle
  contests a chargeback successfully", openapi.yaml ``adjustment_action``) closes the dispute
  won, and its amount is the chargeback's money back with the merchant. Paddle sends no event
  for a chargeback lost: it stands as taken. A ``chargeback_warning`` ("Warning of an
  upcoming chargeback") is ``payment.dispute_warning`` and moves no money; its
  ``chargeback_warning_reverse`` is history.
- What a checkout asked for is its items (the node's own non-catalog price times the quantity,
  less any discount a buyer entered): that is the amount compared with the node's, whatever
  paid it. What the buyer was charged is ``details.totals.grand_total`` ("Total due on a
  transaction after credits but before any payments", openapi.yaml ``transaction_totals``):
  more than the price where tax is added on top (``tax_mode: account_setting``), less where a
  customer's credit balance paid part (``credit``). ``total`` is before credits, and
  ``balance`` after payments (0 once paid), so neither is what the buyer paid.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from edge.domain import attention
from edge.domain.convergence import Refund
from edge.domain.events import EventType
from edge.domain.status import Status
from edge.providers.base import MalformedPayload, NormalizedEvent, ProviderRefund
from edge.providers.paddle.adjustments import provider_refund
from edge.providers.paddle.money import from_paddle
from edge.providers.paddle.shapes import paddle_id, time_ms
from edge.providers.reading import (
    json_object,
    look_up,
    mapping,
    node_money,
    refs,
    string,
    strings,
    tx_id,
)

__all__ = ["EVENT_TABLE", "HANDLED_EVENT_TYPES", "normalize", "read", "time_ms"]

E, S = EventType, Status

# The subscription target is the entity's own status, through SUBSCRIPTION_STATUS.
FROM_DATA = "from_data"
CHECKOUT, RENEWAL = "checkout", "renewal"
REFUND_APPROVED, REFUND_APPROVED_FULL, REFUND_FAILED = (
    "refund:approved",
    "refund:approved:full",
    "refund:failed",
)

# (Paddle event type, variant) -> (normalized type, payment target, subscription target). An
# event whose variant has no row falls back to the type's "" row, and failing that is UNMATCHED.
# Rows of UNMATCHED are kept on purpose: Paddle sends them, the node stores them and moves
# nothing.
EVENT_TABLE: Mapping[tuple[str, str], tuple[EventType, Status | None, Status | str | None]] = {
    ("transaction.created", CHECKOUT): (E.CHECKOUT_CREATED, None, None),
    ("transaction.ready", CHECKOUT): (E.UNMATCHED, None, None),
    ("transaction.updated", CHECKOUT): (E.UNMATCHED, None, None),
    ("transaction.billed", CHECKOUT): (E.UNMATCHED, None, None),
    # A declined card in a checkout that stays open: the buyer may try another (CONTRACT 2).
    ("transaction.payment_failed", CHECKOUT): (E.PAYMENT_ATTEMPT_FAILED, None, None),
    ("transaction.paid", CHECKOUT): (E.PAYMENT_SUCCEEDED, S.SUCCEEDED, None),
    ("transaction.completed", CHECKOUT): (E.PAYMENT_SUCCEEDED, S.SUCCEEDED, None),
    ("transaction.canceled", CHECKOUT): (E.CHECKOUT_CANCELED, S.CANCELED, None),
    ("transaction.paid", RENEWAL): (E.SUBSCRIPTION_PAYMENT_SUCCEEDED, None, S.ACTIVE),
    ("transaction.completed", RENEWAL): (E.SUBSCRIPTION_PAYMENT_SUCCEEDED, None, S.ACTIVE),
    ("transaction.payment_failed", RENEWAL): (E.SUBSCRIPTION_PAYMENT_FAILED, None, S.PAST_DUE),
    ("transaction.past_due", RENEWAL): (E.SUBSCRIPTION_PAYMENT_FAILED, None, S.PAST_DUE),
    # The subscription exists only once its first payment went through: the checkout succeeded.
    ("subscription.created", ""): (E.SUBSCRIPTION_CREATED, S.SUCCEEDED, FROM_DATA),
    ("subscription.activated", ""): (E.SUBSCRIPTION_UPDATED, None, S.ACTIVE),
    ("subscription.resumed", ""): (E.SUBSCRIPTION_UPDATED, None, S.ACTIVE),
    ("subscription.trialing", ""): (E.SUBSCRIPTION_UPDATED, None, S.TRIALING),
    ("subscription.past_due", ""): (E.SUBSCRIPTION_PAST_DUE, None, S.PAST_DUE),
    ("subscription.paused", ""): (E.SUBSCRIPTION_UPDATED, None, S.PAUSED),
    ("subscription.updated", ""): (E.SUBSCRIPTION_UPDATED, None, FROM_DATA),
    ("subscription.canceled", ""): (E.SUBSCRIPTION_CANCELED, None, S.CANCELED),
    # A refund waiting for Paddle's approval, a warning's reversal, a credit: history only.
    ("adjustment.created", ""): (E.UNMATCHED, None, None),
    ("adjustment.updated", ""): (E.UNMATCHED, None, None),
    # the node sums approved refunds by amount; the word is kept for one that states none
    ("adjustment.created", REFUND_APPROVED_FULL): (E.PAYMENT_REFUNDED, S.REFUNDED, None),
    ("adjustment.updated", REFUND_APPROVED_FULL): (E.PAYMENT_REFUNDED, S.REFUNDED, None),
    ("adjustment.created", REFUND_APPROVED): (
        E.PAYMENT_PARTIALLY_REFUNDED, S.PARTIALLY_REFUNDED, None,
    ),
    ("adjustment.updated", REFUND_APPROVED): (
        E.PAYMENT_PARTIALLY_REFUNDED, S.PARTIALLY_REFUNDED, None,
    ),
    # rejected on review (or reversed): it gave nothing back; the refund no longer counts
    ("adjustment.created", REFUND_FAILED): (E.PAYMENT_REFUND_FAILED, None, None),
    ("adjustment.updated", REFUND_FAILED): (E.PAYMENT_REFUND_FAILED, None, None),
    ("adjustment.created", "chargeback"): (E.PAYMENT_DISPUTED, S.DISPUTED, None),
    ("adjustment.created", "chargeback_reverse"): (E.PAYMENT_DISPUTE_CLOSED, S.SUCCEEDED, None),
    ("adjustment.created", "chargeback_warning"): (E.PAYMENT_DISPUTE_WARNING, None, None),
    ("adjustment.created", "chargeback_warning_reverse"): (E.UNMATCHED, None, None),
}  # fmt: skip

# What the merchant must look at (``edge.domain.attention``) when an event of the type applies.
# Paddle closes a dispute only when it won it (chargeback_reverse).
ATTENTION: Mapping[EventType, str] = {
    E.PAYMENT_REFUND_FAILED: attention.REFUND_FAILED,
    E.PAYMENT_DISPUTE_WARNING: attention.DISPUTE_WARNING,
    E.PAYMENT_DISPUTED: attention.DISPUTED,
    E.PAYMENT_DISPUTE_CLOSED: attention.DISPUTE_WON,
}
# Events that carry money given back (``NormalizedEvent.refund``, under the adjustment's id):
# an approved refund, a refund that failed (which no longer counts), a chargeback (taken back).
# Events whose money the node counts (``edge.domain.refunds``): a refund, its failure, a
# chargeback's amount taken back, and a chargeback reversed (that money won back).
GIVES_BACK = frozenset(
    {
        E.PAYMENT_REFUNDED,
        E.PAYMENT_PARTIALLY_REFUNDED,
        E.PAYMENT_REFUND_FAILED,
        E.PAYMENT_DISPUTED,
        E.PAYMENT_DISPUTE_CLOSED,
    }
)
# Events whose change the entity names (``NormalizedEvent.change``): an adjustment by its id, a
# renewal's payment by the renewal's transaction id.
NAMED = frozenset(
    {
        E.PAYMENT_REFUNDED,
        E.PAYMENT_PARTIALLY_REFUNDED,
        E.PAYMENT_REFUND_FAILED,
        E.PAYMENT_DISPUTED,
        E.PAYMENT_DISPUTE_CLOSED,
        E.PAYMENT_DISPUTE_WARNING,
        E.SUBSCRIPTION_PAYMENT_SUCCEEDED,
    }
)


def _origin(d: Mapping[str, Any]) -> str:
    origin = d.get("origin")
    if origin in ("web", "api"):
        return CHECKOUT
    return RENEWAL if origin == "subscription_recurring" else ""


def _adjustment(d: Mapping[str, Any]) -> str:
    action, status = d.get("action"), d.get("status")
    if action == "refund":
        if status == "approved":
            # ``type`` full, partial (the default) or null: only full is a word the node keeps
            return REFUND_APPROVED_FULL if d.get("type") == "full" else REFUND_APPROVED
        return REFUND_FAILED if status in ("rejected", "reversed") else ""
    chargebacks = ("chargeback", "chargeback_reverse", "chargeback_warning")
    return action if action in (*chargebacks, "chargeback_warning_reverse") else ""


VARIANTS: Mapping[str, Callable[[Mapping[str, Any]], str]] = {
    **{f"transaction.{t}": _origin for t in (
        "created", "ready", "updated", "billed", "payment_failed", "paid", "completed",
        "canceled", "past_due",
    )},
    "adjustment.created": _adjustment,
    "adjustment.updated": _adjustment,
}  # fmt: skip

# Paddle's subscription status (spec ``status-subscription``) -> the node's.
SUBSCRIPTION_STATUS: Mapping[str, Status] = {
    "active": S.ACTIVE,
    "trialing": S.TRIALING,
    "past_due": S.PAST_DUE,
    "paused": S.PAUSED,
    "canceled": S.CANCELED,
}

# Every Paddle type the node acts on: what a notification destination should subscribe to.
HANDLED_EVENT_TYPES: tuple[str, ...] = tuple(
    dict.fromkeys(t for (t, _), row in EVENT_TABLE.items() if row[0] != E.UNMATCHED)
)


@dataclass(frozen=True)
class _Facts:
    """What one Paddle entity refers to, whatever the event says about it."""

    refs: tuple[str, ...] = ()
    link_refs: tuple[str, ...] = ()
    subscription_ref: str | None = None
    subscription_status: str | None = None
    period_end_ms: int | None = None
    customer: str | None = None
    amount: int | None = None
    currency: str | None = None
    unreadable: str | None = None  # Paddle's figure, when it has no exact node value
    charged: int | None = None
    refund: Refund | None = None
    provider_refund: ProviderRefund | None = None
    change: str | None = None  # the entity's own id, where it names a change
    custom_data: Mapping[str, str] = field(default_factory=dict)


def normalize(body: bytes) -> NormalizedEvent:
    """The ``NormalizedEvent`` of a verified Paddle event; ``MalformedPayload`` when the body is
    not JSON or lacks ``event_id``, ``event_type`` or ``data``. Never raises otherwise."""
    event = json_object(body)
    event_id, paddle_type = string(event, "event_id"), string(event, "event_type")
    data = event.get("data")
    if not event_id or not paddle_type or not isinstance(data, dict):
        raise MalformedPayload("A Paddle event needs event_id, event_type and data.")
    return read(paddle_type, data, (event_id,), time_ms(event.get("occurred_at")))


def read(
    paddle_type: str,
    data: Mapping[str, Any],
    dedup_ids: tuple[str, ...],
    occurred_at_ms: int | None,
) -> NormalizedEvent:
    """The event a ``paddle_type`` notification about the entity ``data`` makes, stored under
    ``dedup_ids`` (the first is its provider event id). Never raises."""
    variant, row = look_up(EVENT_TABLE, VARIANTS, paddle_type, data)
    event_type, payment_target, subscription_target = row or (E.UNMATCHED, None, None)
    facts = _reader(paddle_type)(variant, data)
    if subscription_target == FROM_DATA:
        subscription_target = SUBSCRIPTION_STATUS.get(facts.subscription_status or "")
    custom = facts.custom_data
    return NormalizedEvent(
        provider_event_id=dedup_ids[0],
        type=event_type,
        provider_type=paddle_type,
        occurred_at_ms=occurred_at_ms,
        tx_id=tx_id(custom.get("txId")),
        refs=facts.refs,
        link_refs=facts.link_refs,
        payment_status=payment_target,
        # The checkout's success that names its subscription starts it (transaction.completed,
        # subscription.created; transaction.paid once it names one).
        starts_subscription=payment_target == S.SUCCEEDED and facts.subscription_ref is not None,
        subscription_ref=facts.subscription_ref,
        subscription_status=Status(subscription_target) if subscription_target else None,
        current_period_end_ms=facts.period_end_ms,
        provider_customer=facts.customer,
        amount_minor=facts.amount,
        currency=facts.currency,
        unreadable_amount=facts.unreadable,
        charged_minor=facts.charged,
        refund=facts.refund if event_type in GIVES_BACK else None,
        attention=ATTENTION.get(event_type),
        provider_refund=facts.provider_refund,
        change=facts.change if event_type in NAMED else None,
        customer_ref=custom.get("customerRef"),
        metadata=custom,
        dedup_ids=dedup_ids,
    )


# --- readers, one per entity ---------------------------------------------------------------


def _read_transaction(variant: str, d: Mapping[str, Any]) -> _Facts:
    txn, sub, customer = _id(d, "id", "txn_"), _id(d, "subscription_id", "sub_"), _customer(d)
    totals = mapping(mapping(d, "details"), "totals")
    checkout = variant == CHECKOUT
    currency = d.get("currency_code")
    return _Facts(
        # a renewal is found by its subscription; its own txn_ is not the checkout's
        refs=refs(txn, sub) if checkout else refs(sub, txn),
        # a customer buys other things too: the node never links one to a checkout
        link_refs=refs(txn, sub) if checkout else (),
        subscription_ref=sub,
        period_end_ms=time_ms(mapping(d, "billing_period").get("ends_at")) if sub else None,
        customer=customer,
        **_items_money(d.get("items"), totals.get("discount"), currency),
        charged=charged(totals, currency),
        change=txn if variant == RENEWAL else None,
        custom_data=_custom(d),
    )


def charged(totals: Mapping[str, Any], currency: Any) -> int | None:
    """What the buyer was charged: ``grand_total`` (after credits, tax included); ``total``
    where Paddle states no grand total."""
    return from_paddle(totals.get("grand_total") or totals.get("total"), currency)


def _read_subscription(variant: str, d: Mapping[str, Any]) -> _Facts:
    sub, txn, customer = _id(d, "id", "sub_"), _id(d, "transaction_id", "txn_"), _customer(d)
    return _Facts(
        refs=refs(sub, txn),
        link_refs=refs(sub, txn),
        subscription_ref=sub,
        subscription_status=string(d, "status"),
        period_end_ms=time_ms(mapping(d, "current_billing_period").get("ends_at")),
        customer=customer,
        **_items_money(d.get("items"), None, d.get("currency_code")),
        custom_data=_custom(d),
    )


def _read_adjustment(variant: str, d: Mapping[str, Any]) -> _Facts:
    # only the transaction: a customer has many, and a renewal's refund is not the checkout's
    totals = mapping(d, "totals")
    money = _money(totals.get("total"), d.get("currency_code") or totals.get("currency_code"))
    adjustment = string(d, "id") or "adjustment"
    given_back = money["amount"]
    return _Facts(
        refs=refs(_id(d, "transaction_id", "txn_")),
        customer=_customer(d),
        **money,
        refund=Refund(given_back, adjustment) if given_back is not None else None,
        provider_refund=provider_refund(d),
        change=adjustment,
    )


def _read_other(variant: str, d: Mapping[str, Any]) -> _Facts:
    return _Facts(refs=refs(string(d, "id")), custom_data=_custom(d))


Reader = Callable[[str, Mapping[str, Any]], _Facts]
_READERS: Mapping[str, Reader] = {
    "transaction": _read_transaction,
    "subscription": _read_subscription,
    "adjustment": _read_adjustment,
}


def _reader(paddle_type: str) -> Reader:
    return _READERS.get(paddle_type.partition(".")[0], _read_other)


# --- Paddle's own shapes of JSON values (``shapes``; edge.providers.reading reads the rest) --

_id = paddle_id


def _customer(d: Mapping[str, Any]) -> str | None:
    return _id(d, "customer_id", "ctm_")


def _custom(d: Mapping[str, Any]) -> dict[str, str]:
    """The string values of ``custom_data`` (the node wrote txId, customerRef and the
    transaction's metadata there)."""
    return strings(d.get("custom_data"))


def _money(amount: Any, currency: Any) -> dict[str, Any]:
    return node_money(amount, currency, from_paddle(amount, currency))


def _items_money(items: Any, discount: Any, currency: Any) -> dict[str, Any]:
    """What a transaction's items ask: each price's unit amount times its quantity, in the
    transaction's currency, less the discount (none for a checkout the node made: a buyer's
    code pays less than the product's price). A credit balance that paid part changes none of
    it (it is in ``credit`` and ``grand_total``)."""
    if not isinstance(items, list) or not items:
        return {"amount": None, "currency": None, "unreadable": None}
    total = 0
    for item in items:
        unit = mapping(mapping(item if isinstance(item, dict) else {}, "price"), "unit_price")
        quantity = item.get("quantity") if isinstance(item, dict) else None
        minor = from_paddle(unit.get("amount"), unit.get("currency_code"))
        if (
            minor is None
            or unit.get("currency_code") != currency
            or not isinstance(quantity, int)
            or isinstance(quantity, bool)
            or quantity < 1
        ):
            return {"amount": None, "currency": None, "unreadable": "items not readable"}
        total += minor * quantity
    off = from_paddle(discount, currency) if discount is not None else 0
    if off is None:
        return {"amount": None, "currency": None, "unreadable": f"discount {discount}"[:40]}
    if total < off:
        return {"amount": None, "currency": None, "unreadable": f"discount {discount}"[:40]}
    return _money(str(total - off), currency)
