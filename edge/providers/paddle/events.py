"""Paddle Billing events in the node's terms (CONTRACT 6, PROVIDERS.md "Event mapping"): the
table and a reader per entity (transaction, subscription, adjustment).

``EVENT_TABLE`` says what an event *means*, for a Paddle type and a variant read from its
``data``; the readers say what it *refers to*: the node's transaction id (``custom_data.txId``,
which the node set), Paddle ids to match and link, amount, customer, subscription. Types not in
the table are stored as history (``UNMATCHED``, no status move) and answered 200, so Paddle does
not retry them for ever.

Paddle facts that shape it:
- One transaction entity stands for a checkout (``origin`` web or api) and for each renewal of
  the subscription it starts (``origin`` subscription_recurring); the origin is the variant.
  Paddle copies the subscription's ``custom_data`` to its renewals, so they carry the txId of
  the checkout that started it.
- ``transaction.paid`` may come before Paddle has made the subscription (``subscription_id``
  "might not yet" be set); ``transaction.completed`` and ``subscription.created`` carry it.
  Whichever of them names the ``sub_`` first starts the subscription.
- Adjustments (refunds, chargebacks) carry no ``custom_data``: they match by
  ``transaction_id`` alone, which the node linked when it created the transaction. A refund
  counts once Paddle has approved it (``adjustment.updated``, status approved), for what it
  gives back (``totals.total``, "Total after tax"): the node sums refunds, because ``type`` is
  no guide (null in Paddle's own SDK fixtures, ``partial`` by default, and a whole refund may be
  made by items).
- What a checkout asked for is its items (the node's own non-catalog price times the quantity,
  less any discount a buyer entered); what it took is ``grand_total``, which includes tax on
  top where the merchant's account prices exclude it (``tax_mode: account_setting``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from edge.domain.convergence import Refund
from edge.domain.events import EventType
from edge.domain.status import Status
from edge.providers.base import MalformedPayload, NormalizedEvent
from edge.providers.paddle.money import from_paddle
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

E, S = EventType, Status

# The subscription target is the entity's own status, through SUBSCRIPTION_STATUS.
FROM_DATA = "from_data"
CHECKOUT, RENEWAL = "checkout", "renewal"

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
    # A refund waiting for Paddle's approval, a chargeback warning, a credit: history only.
    ("adjustment.created", ""): (E.UNMATCHED, None, None),
    ("adjustment.updated", ""): (E.UNMATCHED, None, None),
    # the node sums approved refunds by amount; the word is kept for one that states none
    ("adjustment.created", "refund:approved:full"): (E.PAYMENT_REFUNDED, S.REFUNDED, None),
    ("adjustment.updated", "refund:approved:full"): (E.PAYMENT_REFUNDED, S.REFUNDED, None),
    ("adjustment.created", "refund:approved"): (
        E.PAYMENT_PARTIALLY_REFUNDED, S.PARTIALLY_REFUNDED, None,
    ),
    ("adjustment.updated", "refund:approved"): (
        E.PAYMENT_PARTIALLY_REFUNDED, S.PARTIALLY_REFUNDED, None,
    ),
    ("adjustment.created", "chargeback"): (E.PAYMENT_DISPUTED, S.DISPUTED, None),
    ("adjustment.created", "chargeback_reverse"): (E.PAYMENT_DISPUTE_CLOSED, S.SUCCEEDED, None),
}  # fmt: skip


def _origin(d: Mapping[str, Any]) -> str:
    origin = d.get("origin")
    if origin in ("web", "api"):
        return CHECKOUT
    return RENEWAL if origin == "subscription_recurring" else ""


def _adjustment(d: Mapping[str, Any]) -> str:
    action = d.get("action")
    if action == "refund" and d.get("status") == "approved":
        # ``type`` full, partial (the default) or null: only full is a word the node keeps
        return "refund:approved:full" if d.get("type") == "full" else "refund:approved"
    return action if action in ("chargeback", "chargeback_reverse") else ""


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
    custom_data: Mapping[str, str] = field(default_factory=dict)


def normalize(body: bytes) -> NormalizedEvent:
    """The ``NormalizedEvent`` of a verified Paddle event; ``MalformedPayload`` when the body is
    not JSON or lacks ``event_id``, ``event_type`` or ``data``. Never raises otherwise."""
    event = json_object(body)
    event_id, paddle_type = string(event, "event_id"), string(event, "event_type")
    data = event.get("data")
    if not event_id or not paddle_type or not isinstance(data, dict):
        raise MalformedPayload("A Paddle event needs event_id, event_type and data.")
    variant, row = look_up(EVENT_TABLE, VARIANTS, paddle_type, data)
    event_type, payment_target, subscription_target = row or (E.UNMATCHED, None, None)
    facts = _reader(paddle_type)(variant, data)
    if subscription_target == FROM_DATA:
        subscription_target = SUBSCRIPTION_STATUS.get(facts.subscription_status or "")
    custom = facts.custom_data
    return NormalizedEvent(
        provider_event_id=event_id,
        type=event_type,
        provider_type=paddle_type,
        occurred_at_ms=time_ms(event.get("occurred_at")),
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
        refund=facts.refund if payment_target in (S.REFUNDED, S.PARTIALLY_REFUNDED) else None,
        customer_ref=custom.get("customerRef"),
        metadata=custom,
        dedup_ids=(event_id,),
    )


# --- readers, one per entity ---------------------------------------------------------------


def _read_transaction(variant: str, d: Mapping[str, Any]) -> _Facts:
    txn, sub, customer = _id(d, "id", "txn_"), _id(d, "subscription_id", "sub_"), _customer(d)
    totals = mapping(mapping(d, "details"), "totals")
    checkout = variant == CHECKOUT
    currency = d.get("currency_code")
    charged = from_paddle(totals.get("grand_total") or totals.get("total"), currency)
    return _Facts(
        # a renewal is found by its subscription; its own txn_ is not the checkout's
        refs=refs(txn, sub) if checkout else refs(sub, txn),
        # a customer buys other things too: the node never links one to a checkout
        link_refs=refs(txn, sub) if checkout else (),
        subscription_ref=sub,
        period_end_ms=time_ms(mapping(d, "billing_period").get("ends_at")) if sub else None,
        customer=customer,
        **_items_money(d.get("items"), totals.get("discount"), currency),
        charged=charged,
        custom_data=_custom(d),
    )


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


# --- Paddle's own shapes of JSON values (edge.providers.reading reads the rest) ---------

_PADDLE_ID = re.compile(r"[a-z]{2,6}_[a-z0-9]{26}")
# RFC 3339 as Paddle writes it, with 0 to 9 fraction digits (read to the millisecond)
_TIME = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:\d\d)")


def _id(o: Mapping[str, Any], key: str, prefix: str) -> str | None:
    """A Paddle id of the expected kind (``txn_``, ``sub_`` ...), else None."""
    value = o.get(key)
    ok = isinstance(value, str) and value.startswith(prefix) and _PADDLE_ID.fullmatch(value)
    return value if ok else None


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
    code pays less than the product's price)."""
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


def time_ms(value: Any) -> int | None:
    """Milliseconds of a Paddle RFC 3339 time (``2024-04-12T10:18:49.621022Z``)."""
    if not isinstance(value, str):
        return None
    match = _TIME.fullmatch(value)
    if match is None:
        return None
    whole, fraction, zone = match.groups()
    try:
        moment = datetime.fromisoformat(whole + zone.replace("Z", "+00:00"))
    except ValueError:
        return None
    return int(moment.timestamp()) * 1000 + int((fraction or "0").ljust(3, "0")[:3])
