"""Stripe events in the node's terms (CONTRACT 6): the mapping table and the readers.

Two steps. ``EVENT_TABLE`` says what an event *means*: for a Stripe type and a variant read
from its object (a checkout's ``payment_status``, full or partial refund, a dispute's outcome)
the normalized type and where the payment and the subscription should move. A reader per
Stripe object kind says what an event *refers to*: the node's transaction id, provider ids to
match and link, amount, customer, metadata.

Stripe types not in the table are still normalized, as ``EventType.UNMATCHED`` with no status
targets and whatever references their object carries, so the node stores them as history and
answers 200 (a provider must not retry an event for ever because the node does not use it).

Money after the payment (CONTRACT 4.3a):

- Refunds are told twice by Stripe: ``charge.refunded`` carries the charge, whose
  ``amount_refunded`` is the total refunded so far (``Refund(total)``), and each refund has
  events of its own (``refund.created``, ``refund.updated``, ``refund.failed``,
  ``charge.refund.updated``; sent for every refund since API 2024-10-28.acacia,
  docs.stripe.com/changelog/acacia/2024-10-28/refund-webhook-update). A refund's event is read
  by its ``status`` (stripe-python 16.1.0 ``_refund.py``: pending, requires_action, succeeded,
  failed or canceled): succeeded gives back ``Refund(amount, of=<re_ id>)``; failed and
  canceled are ``payment.refund_failed`` of that refund; pending and requires_action move
  nothing (history). Each carries ``provider_refund``, tagged with ``metadata.refundId``: the
  node's refund id its refund call set.
- A dispute has its own amount (a dispute may take back part of a charge) and names the change
  it is (``change``: its id); lost, it gives back ``Refund(amount, of=<dp_ id>)``, so a partial
  dispute lost moves only its part.
- An early fraud warning (``radar.early_fraud_warning.*``, stripe-python 16.1.0
  ``radar/_early_fraud_warning.py``) is ``payment.dispute_warning``, named by its id. The warning
  names its charge and payment intent but states no amount (``sync`` adds the charge's).
- A renewal's invoice (``invoice.paid``, ``invoice.payment_failed`` of a later period) names the
  change by the invoice id, so each renewal is one change however often it is told.

API versions: from 2025-03-31 (basil) a subscription's ``current_period_end`` lives on its
items and an invoice names its subscription under ``parent.subscription_details``; both the
old and the new places are read.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from edge.domain.convergence import Refund
from edge.domain.events import EventType
from edge.domain.money import EXPONENTS
from edge.domain.status import Status
from edge.providers.base import (
    REFUND_FAILED,
    REFUND_PENDING,
    REFUND_SUCCEEDED,
    MalformedPayload,
    NormalizedEvent,
    ProviderRefund,
)
from edge.providers.reading import (
    first,
    integer,
    json_object,
    look_up,
    mapping,
    node_money,
    refs,
    string,
    strings,
    tx_id,
)
from edge.providers.stripe.money import from_stripe

E, S = EventType, Status

# The subscription target is the object's own status, through SUBSCRIPTION_STATUS.
FROM_OBJECT = "from_object"

# The events of one refund (their object is the refund): made, changed, failed.
REFUND_TYPES = ("refund.created", "refund.updated", "refund.failed", "charge.refund.updated")

# (Stripe event type, variant) -> (normalized type, payment target, subscription target).
# The variant is "" unless VARIANTS has a function for the type; an event whose variant has no
# row falls back to the type's "" row, and failing that is UNMATCHED.
EVENT_TABLE: Mapping[tuple[str, str], tuple[EventType, Status | None, Status | str | None]] = {
    ("checkout.session.completed", "paid"): (E.PAYMENT_SUCCEEDED, S.SUCCEEDED, None),
    ("checkout.session.completed", "no_payment_required"): (E.PAYMENT_SUCCEEDED, S.SUCCEEDED, None),
    # Bank debits and vouchers: the session completes before the money arrives.
    ("checkout.session.completed", "unpaid"): (E.PAYMENT_PROCESSING, S.PROCESSING, None),
    ("checkout.session.async_payment_succeeded", ""): (E.PAYMENT_SUCCEEDED, S.SUCCEEDED, None),
    ("checkout.session.async_payment_failed", ""): (E.PAYMENT_FAILED, S.FAILED, None),
    ("checkout.session.expired", ""): (E.CHECKOUT_EXPIRED, S.EXPIRED, None),
    # A declined card inside a session that is still open: the buyer may try another one, so
    # the status stays where it is (CONTRACT 2).
    ("payment_intent.payment_failed", ""): (E.PAYMENT_ATTEMPT_FAILED, None, None),
    ("charge.refunded", "full"): (E.PAYMENT_REFUNDED, S.REFUNDED, None),
    ("charge.refunded", "partial"): (E.PAYMENT_PARTIALLY_REFUNDED, S.PARTIALLY_REFUNDED, None),
    # Each refund by its own status (``refund_state``); a pending one has no row: history.
    **{(t, REFUND_SUCCEEDED): (E.PAYMENT_REFUNDED, S.REFUNDED, None) for t in REFUND_TYPES},
    **{(t, REFUND_FAILED): (E.PAYMENT_REFUND_FAILED, None, None) for t in REFUND_TYPES},
    ("radar.early_fraud_warning.created", ""): (E.PAYMENT_DISPUTE_WARNING, None, None),
    ("radar.early_fraud_warning.updated", ""): (E.PAYMENT_DISPUTE_WARNING, None, None),
    ("charge.dispute.created", ""): (E.PAYMENT_DISPUTED, S.DISPUTED, None),
    ("charge.dispute.closed", "won"): (E.PAYMENT_DISPUTE_CLOSED, S.SUCCEEDED, None),
    ("charge.dispute.closed", "warning_closed"): (E.PAYMENT_DISPUTE_CLOSED, S.SUCCEEDED, None),
    ("charge.dispute.closed", "lost"): (E.PAYMENT_DISPUTE_CLOSED, S.REFUNDED, None),
    ("customer.subscription.created", ""): (E.SUBSCRIPTION_CREATED, None, FROM_OBJECT),
    ("customer.subscription.updated", "past_due"): (E.SUBSCRIPTION_PAST_DUE, None, S.PAST_DUE),
    ("customer.subscription.updated", ""): (E.SUBSCRIPTION_UPDATED, None, FROM_OBJECT),
    ("customer.subscription.paused", ""): (E.SUBSCRIPTION_UPDATED, None, S.PAUSED),
    ("customer.subscription.resumed", ""): (E.SUBSCRIPTION_UPDATED, None, S.ACTIVE),
    ("customer.subscription.deleted", ""): (E.SUBSCRIPTION_CANCELED, None, S.CANCELED),
    # The first invoice of a subscription checkout is its first payment: the checkout succeeds.
    ("invoice.paid", "subscription_create"): (
        E.SUBSCRIPTION_PAYMENT_SUCCEEDED, S.SUCCEEDED, S.ACTIVE,
    ),
    ("invoice.paid", ""): (E.SUBSCRIPTION_PAYMENT_SUCCEEDED, None, S.ACTIVE),
    ("invoice.payment_failed", ""): (E.SUBSCRIPTION_PAYMENT_FAILED, None, S.PAST_DUE),
}  # fmt: skip

# Stripe's refund status -> where the refund stands (``ProviderRefund.state``); a status this
# table does not know is pending: its outcome is not known, so its amount stays held
REFUND_STATE: Mapping[str, str] = {
    "pending": REFUND_PENDING,
    "requires_action": REFUND_PENDING,
    "succeeded": REFUND_SUCCEEDED,
    "failed": REFUND_FAILED,
    "canceled": REFUND_FAILED,
}


def refund_state(o: Mapping[str, Any]) -> str:
    """Where a Stripe refund object stands."""
    return REFUND_STATE.get(string(o, "status") or "", REFUND_PENDING)


VARIANTS: Mapping[str, Callable[[Mapping[str, Any]], str]] = {
    **dict.fromkeys(REFUND_TYPES, refund_state),
    "checkout.session.completed": lambda o: string(o, "payment_status") or "",
    "charge.refunded": lambda o: (
        "full" if (integer(o, "amount_refunded") or 0) >= (integer(o, "amount") or 0) else "partial"
    ),
    "charge.dispute.closed": lambda o: string(o, "status") or "",
    "customer.subscription.updated": lambda o: (
        "past_due" if o.get("status") in ("past_due", "unpaid") else ""
    ),
    "invoice.paid": lambda o: (
        "subscription_create" if o.get("billing_reason") == "subscription_create" else ""
    ),
}

# Stripe subscription status -> the node's; None: not a status the node tracks (incomplete is
# a checkout still under way, which the transaction already shows).
SUBSCRIPTION_STATUS: Mapping[str, Status | None] = {
    "active": S.ACTIVE,
    "trialing": S.TRIALING,
    "past_due": S.PAST_DUE,
    "unpaid": S.PAST_DUE,
    "paused": S.PAUSED,
    "canceled": S.CANCELED,
    "incomplete": None,
    "incomplete_expired": S.CANCELED,
}

# Every Stripe type the table maps: what a webhook endpoint should subscribe to (each one a
# type WebhookEndpointCreateParams.enabled_events takes, tests/conformance). Since the refund
# and warning events were added, an endpoint subscribed to the earlier list misses failed
# refunds and early fraud warnings: the node learns them by asking (``sync``).
HANDLED_EVENT_TYPES: tuple[str, ...] = tuple(dict.fromkeys(t for t, _ in EVENT_TABLE))


@dataclass(slots=True)  # not frozen: made per request (docs/architecture.md)
class _Facts:
    """What one Stripe object refers to, whatever the event says about it."""

    tx_id: str | None = None
    refs: tuple[str, ...] = ()
    link_refs: tuple[str, ...] = ()
    subscription_ref: str | None = None
    subscription_status: str | None = None  # Stripe's own word
    current_period_end_s: int | None = None
    provider_customer: str | None = None
    amount: int | None = None
    currency: str | None = None
    unreadable: str | None = None  # Stripe's figure, when it has no exact node value
    refund: Refund | None = None  # what it gives back, if the event's row moves money back
    provider_refund: ProviderRefund | None = None
    change: str | None = None
    metadata: Mapping[str, str] = field(default_factory=dict)


def normalize(body: bytes) -> NormalizedEvent:
    """The ``NormalizedEvent`` of a verified Stripe event body; ``MalformedPayload`` when the
    body is not JSON or lacks ``id``, ``type`` or ``data.object``. Never raises otherwise."""
    event = json_object(body)
    event_id, stripe_type = string(event, "id"), string(event, "type")
    data = event.get("data")
    obj = data.get("object") if isinstance(data, dict) else None
    if not event_id or not stripe_type or not isinstance(obj, dict):
        raise MalformedPayload("A Stripe event needs id, type and data.object.")

    _, row = look_up(EVENT_TABLE, VARIANTS, stripe_type, obj)
    event_type, payment_target, subscription_target = row or (E.UNMATCHED, None, None)
    facts = _READERS.get(string(obj, "object") or "", _read_other)(stripe_type, obj)
    if subscription_target == FROM_OBJECT:
        subscription_target = SUBSCRIPTION_STATUS.get(facts.subscription_status or "")
    created = integer(event, "created")
    period_end = facts.current_period_end_s
    metadata = facts.metadata
    return NormalizedEvent(
        provider_event_id=event_id,
        type=event_type,
        provider_type=stripe_type,
        occurred_at_ms=created * 1000 if created is not None else None,
        tx_id=facts.tx_id or tx_id(metadata.get("txId")),
        refs=facts.refs,
        link_refs=facts.link_refs,
        payment_status=payment_target,
        # A successful payment of something that has a subscription is that subscription's
        # first: the checkout session (subscription mode) or its first invoice.
        starts_subscription=payment_target == S.SUCCEEDED and facts.subscription_ref is not None,
        subscription_ref=facts.subscription_ref,
        subscription_status=Status(subscription_target) if subscription_target else None,
        current_period_end_ms=period_end * 1000 if period_end is not None else None,
        provider_customer=facts.provider_customer,
        amount_minor=facts.amount,
        currency=facts.currency,
        unreadable_amount=facts.unreadable,
        refund=facts.refund if _gives_back(event_type, payment_target) else None,
        customer_ref=metadata.get("customerRef"),
        metadata=metadata,
        dedup_ids=(event_id,),
        provider_refund=facts.provider_refund,
        change=facts.change,
    )


def _gives_back(event_type: EventType, payment_target: Status | None) -> bool:
    """Does an event of this row carry what its refund gives back (or, failed, no longer
    gives back)?"""
    return (
        payment_target in (S.REFUNDED, S.PARTIALLY_REFUNDED)
        or event_type == E.PAYMENT_REFUND_FAILED
    )


# --- readers, one per Stripe object kind ------------------------------------------------


def _read_session(stripe_type: str, o: Mapping[str, Any]) -> _Facts:
    # a customer pays for many things: the node never links one to a checkout
    return _Facts(
        tx_id=tx_id(o.get("client_reference_id")),
        refs=_ids(o.get("id")),
        link_refs=_ids(o.get("payment_intent"), o.get("subscription")),
        subscription_ref=object_id(o.get("subscription")),
        provider_customer=object_id(o.get("customer")),
        **money_of(o, "amount_total"),
        metadata=strings(o.get("metadata")),
    )


def _read_payment_intent(stripe_type: str, o: Mapping[str, Any]) -> _Facts:
    return _Facts(
        refs=_ids(o.get("id")),
        link_refs=_ids(o.get("latest_charge")),
        provider_customer=object_id(o.get("customer")),
        **money_of(o, "amount"),
        metadata=strings(o.get("metadata")),
    )


def _read_charge(stripe_type: str, o: Mapping[str, Any]) -> _Facts:
    refunded = stripe_type == "charge.refunded"
    money = money_of(o, "amount_refunded" if refunded else "amount")
    total = money["amount"]
    return _Facts(
        refs=_ids(o.get("payment_intent"), o.get("id")),
        link_refs=_ids(o.get("id")),
        provider_customer=object_id(o.get("customer")),
        **money,
        # ``amount_refunded`` is everything refunded from the charge so far
        refund=Refund(total) if refunded and total is not None else None,
        metadata=strings(o.get("metadata")),
    )


def _read_refund(stripe_type: str, o: Mapping[str, Any]) -> _Facts:
    money = money_of(o, "amount")
    refund_id = object_id(o.get("id"))
    amount = money["amount"]
    return _Facts(
        refs=_ids(o.get("payment_intent"), o.get("charge")),
        # the refund names the charge of the payment intent it refunds: later events that name
        # only the charge (a warning, a dispute) match through it
        link_refs=_ids(o.get("charge")),
        **money,
        refund=Refund(amount, of=refund_id) if amount is not None and refund_id else None,
        provider_refund=read_refund(o),
        metadata=strings(o.get("metadata")),
    )


def _read_dispute(stripe_type: str, o: Mapping[str, Any]) -> _Facts:
    """A dispute's own amount (a partial dispute takes back part of the charge): given back
    when it is lost, as a refund named by the dispute."""
    money = money_of(o, "amount")
    dispute_id = object_id(o.get("id"))
    amount = money["amount"]
    return _Facts(
        refs=_ids(o.get("payment_intent"), o.get("charge")),
        **money,
        refund=Refund(amount, of=dispute_id) if amount is not None and dispute_id else None,
        change=dispute_id,
        metadata=strings(o.get("metadata")),
    )


def _read_fraud_warning(stripe_type: str, o: Mapping[str, Any]) -> _Facts:
    """An early fraud warning names its charge and payment intent, and no amount."""
    return _Facts(
        refs=_ids(o.get("payment_intent"), o.get("charge")), change=object_id(o.get("id"))
    )


def _read_subscription(stripe_type: str, o: Mapping[str, Any]) -> _Facts:
    item = _first(o.get("items"))
    price = mapping(item, "price")
    unit, quantity = integer(price, "unit_amount"), integer(item, "quantity") or 1
    money = _node_money(
        unit * quantity if unit is not None else price.get("unit_amount"), o.get("currency")
    )
    return _Facts(
        refs=_ids(o.get("id")),
        subscription_ref=object_id(o.get("id")),
        subscription_status=string(o, "status"),
        current_period_end_s=(
            integer(o, "current_period_end") or integer(item, "current_period_end")
        ),
        provider_customer=object_id(o.get("customer")),
        **money,
        metadata=strings(o.get("metadata")),
    )


def _read_invoice(stripe_type: str, o: Mapping[str, Any]) -> _Facts:
    details = mapping(mapping(o, "parent"), "subscription_details")  # basil and later
    old_details = mapping(o, "subscription_details")  # before basil
    line = _first(o.get("lines"))
    item_details = mapping(mapping(line, "parent"), "subscription_item_details")
    subscription = (
        object_id(o.get("subscription"))
        or object_id(details.get("subscription"))
        or object_id(item_details.get("subscription"))
        or object_id(line.get("subscription"))
    )
    metadata = (
        strings(old_details.get("metadata"))
        or strings(details.get("metadata"))
        or strings(line.get("metadata"))
        or strings(o.get("metadata"))
    )
    period = mapping(line, "period")
    paid = stripe_type == "invoice.paid"
    # a renewal is named by its invoice; the first invoice is the checkout's own payment
    renewal = o.get("billing_reason") != "subscription_create"
    return _Facts(
        refs=_ids(subscription, o.get("id")),
        change=object_id(o.get("id")) if renewal else None,
        subscription_ref=subscription,
        current_period_end_s=integer(period, "end") if subscription else None,
        provider_customer=object_id(o.get("customer")),
        **money_of(o, "amount_paid" if paid else "amount_due"),
        metadata=metadata,
    )


def _read_other(stripe_type: str, o: Mapping[str, Any]) -> _Facts:
    return _Facts(refs=_ids(o.get("id")), metadata=strings(o.get("metadata")))


_READERS: Mapping[str, Callable[[str, Mapping[str, Any]], _Facts]] = {
    "checkout.session": _read_session,
    "payment_intent": _read_payment_intent,
    "charge": _read_charge,
    "refund": _read_refund,
    "dispute": _read_dispute,
    "radar.early_fraud_warning": _read_fraud_warning,
    "subscription": _read_subscription,
    "invoice": _read_invoice,
}


def read_refund(o: Mapping[str, Any]) -> ProviderRefund | None:
    """A Stripe refund object as the node keeps a provider's refund: its id, amount in the
    node's minor units, state (``refund_state``), ``created`` in ms, the node's refund id it
    is tagged with (``metadata.refundId``) and, failed, Stripe's ``failure_reason``; None when
    it has no id."""
    refund_id = object_id(o.get("id"))
    if refund_id is None:
        return None
    created = integer(o, "created")
    return ProviderRefund(
        id=refund_id,
        amount_minor=money_of(o, "amount")["amount"],
        state=refund_state(o),
        created_ms=created * 1000 if created is not None else None,
        tag=strings(o.get("metadata")).get("refundId"),
        detail=string(o, "failure_reason") or "",
    )


# --- Stripe's own shapes of JSON values (edge.providers.reading reads the rest) ----------


def object_id(value: Any) -> str | None:
    """A Stripe reference: an id string, or an expanded object carrying one."""
    if isinstance(value, dict):
        value = value.get("id")
    return value if isinstance(value, str) and value else None


def _ids(*values: Any) -> tuple[str, ...]:
    return refs(*map(object_id, values))


def _first(stripe_list: Any) -> Mapping[str, Any]:
    """The first element of a Stripe list object (``{"object": "list", "data": [...]}``)."""
    return first(stripe_list.get("data") if isinstance(stripe_list, dict) else None)


def _currency(value: Any) -> str | None:
    """The upper-case ISO code, or None for a currency the node cannot express in minor units
    (the node would not be able to render that amount)."""
    code = value.upper() if isinstance(value, str) else None
    return code if code in EXPONENTS else None


def money_of(o: Mapping[str, Any], amount_key: str) -> dict[str, Any]:
    """What ``o`` states under ``amount_key`` in its ``currency``, in the node's terms
    (``amount``, ``currency``, ``unreadable``: ``edge.providers.reading.node_money``)."""
    return _node_money(o.get(amount_key), o.get("currency"))


def _node_money(stripe_amount: Any, stripe_currency: Any) -> dict[str, Any]:
    """``node_money`` of a Stripe amount (converted from Stripe's minor units, ``money``), in
    the upper-case currency; Stripe's own figure when it has no exact node value."""
    currency = _currency(stripe_currency)
    # stated but not a whole number of minor units ("1999", 19.99, true): stated, and unreadable
    whole = isinstance(stripe_amount, int) and not isinstance(stripe_amount, bool)
    amount = (
        from_stripe(stripe_amount, currency)
        if whole and currency is not None and stripe_amount >= 0
        else None
    )
    if amount is None:
        currency = stripe_currency if isinstance(stripe_currency, str) else "?"
    return node_money(stripe_amount, currency, amount)
