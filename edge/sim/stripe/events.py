"""Stripe event envelopes, and ready-made events for ``edge trigger``."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from edge.domain.money import EXPONENTS
from edge.sim.stripe import objects
from edge.sim.stripe.objects import THREE_DECIMAL, derived_id, new_id, now_s, stripe_amount


def build_event(event_type: str, obj: Mapping[str, Any], livemode: bool) -> dict[str, Any]:
    """A snapshot event carrying a copy of ``obj`` as ``data.object``."""
    return {
        "api_version": objects.API_VERSION,
        "created": now_s(),
        "data": {"object": _copy(obj)},
        "id": new_id("evt"),
        "livemode": livemode,
        "object": "event",
        "pending_webhooks": 1,
        "request": {"id": None, "idempotency_key": None},
        "type": event_type,
    }


def event_for_trigger(normalized_type: str, tx: Mapping[str, Any]) -> dict[str, Any]:
    """A Stripe event that the Stripe adapter normalizes to ``normalized_type`` for the node's
    transaction record ``tx`` (id, amount in minor units, currency, isTest, metadata,
    customerRef, providerRef, kind, interval, subscriptionRef, providerCustomer).

    The event is about the transaction's own Stripe objects, as the node matches them (CONTRACT
    4.3): the Checkout Session it created (``providerRef``), that session's payment intent and
    charge, and the subscription it started (``subscriptionRef``). Stripe ties the intent,
    charge and subscription to the session when the buyer pays; their ids here are the ones the
    simulator gives them (``objects.derived_id``), so a refund or a dispute triggered after a
    triggered (or simulated) payment names the intent the node linked then. Amounts are the
    transaction's, in Stripe's units. Raises ValueError for a type it cannot produce, naming
    those it can.
    """
    build = _TRIGGERS.get(normalized_type)
    if build is None:
        raise ValueError(
            f"cannot simulate a Stripe {normalized_type!r} event; supported: "
            + ", ".join(sorted(_TRIGGERS))
        )
    event_type, obj = build(_Tx(tx))
    return build_event(event_type, obj, livemode=not tx.get("isTest", True))


class _Tx:
    """The parts of a node transaction the builders need, with defaults for missing ones."""

    def __init__(self, tx: Mapping[str, Any]) -> None:
        self.id: str = tx["id"]
        self.livemode = not tx.get("isTest", True)
        currency = str(tx.get("currency") or "EUR").upper()
        amount = (
            stripe_amount(int(tx.get("amount") or 0), currency) if currency in EXPONENTS else None
        )
        self.amount: int = amount or 0
        self.currency = currency.lower()
        self.subscription = tx.get("kind") == "subscription"
        self.interval: str = tx.get("interval") or "month"
        # what the node's checkout sets (payment_intent_data / subscription_data metadata)
        self.metadata = {**(tx.get("metadata") or {}), "txId": self.id}
        if tx.get("customerRef"):
            self.metadata["customerRef"] = tx["customerRef"]
        self.session_id: str = tx.get("providerRef") or new_id("cs", self.livemode)
        self.intent_id = derived_id("pi", self.session_id)
        self.charge_id = derived_id("ch", self.intent_id)
        self.customer: str = tx.get("providerCustomer") or derived_id("cus", self.session_id)
        self.subscription_id: str = tx.get("subscriptionRef") or derived_id("sub", self.session_id)

    def session(self, payment_status: str, status: str) -> dict[str, Any]:
        session = objects.checkout_session(
            session_id=self.session_id,
            livemode=self.livemode,
            mode="subscription" if self.subscription else "payment",
            amount_total=self.amount,
            currency=self.currency,
            success_url=None,
            cancel_url=None,
            url=None,
            client_reference_id=self.id,
            metadata=self.metadata,
        )
        session.update(payment_status=payment_status, status=status)
        if status == "complete" and self.subscription:
            session.update(customer=self.customer, subscription=self.subscription_id)
        elif status == "complete":
            session["payment_intent"] = self.intent_id
        return session

    def charge(self) -> dict[str, Any]:
        return objects.charge(
            livemode=self.livemode,
            amount=self.amount,
            currency=self.currency,
            payment_intent_id=self.intent_id,
            metadata=self.metadata,
            charge_id=self.charge_id,
        )

    def subscription_obj(self, status: str) -> dict[str, Any]:
        return objects.subscription(
            livemode=self.livemode,
            customer_id=self.customer,
            amount=self.amount,
            currency=self.currency,
            interval=self.interval,
            product_name="Subscription",
            metadata=self.metadata,
            status=status,
            subscription_id=self.subscription_id,
        )

    def invoice(self, paid: bool) -> dict[str, Any]:
        sub = self.subscription_obj("active" if paid else "past_due")
        return objects.invoice(subscription_obj=sub, billing_reason="subscription_cycle", paid=paid)

    def part(self) -> int:
        """About half the amount, in a step Stripe can refund (tens for three-decimal
        currencies)."""
        step = 10 if self.currency in THREE_DECIMAL else 1
        return max(step, self.amount // 2 // step * step)


def _refund(tx: _Tx, amount: int) -> dict[str, Any]:
    charge = tx.charge()
    charge.update(amount_refunded=amount, refunded=amount >= charge["amount"])
    charge["refunds"]["data"] = [objects.refund(charge_obj=charge, amount=amount)]
    return charge


def _failed_refund(tx: _Tx) -> dict[str, Any]:
    """A refund of part of the payment that failed after Stripe took it (made in Stripe's
    dashboard: no metadata; it names the payment intent)."""
    made = objects.refund(charge_obj=tx.charge(), amount=tx.part())
    return objects.refund_failed(made, "expired_or_canceled_card")


def _declined(tx: _Tx) -> dict[str, Any]:
    intent = objects.payment_intent(
        livemode=tx.livemode,
        amount=tx.amount,
        currency=tx.currency,
        metadata=tx.metadata,
        intent_id=tx.intent_id,
    )
    intent["last_payment_error"] = objects.card_declined_error()
    return intent


_Builder = Callable[[_Tx], tuple[str, dict[str, Any]]]

_TRIGGERS: Mapping[str, _Builder] = {
    "payment.succeeded": lambda t: ("checkout.session.completed", t.session("paid", "complete")),
    "payment.processing": lambda t: ("checkout.session.completed", t.session("unpaid", "complete")),
    "payment.failed": lambda t: (
        "checkout.session.async_payment_failed",
        t.session("unpaid", "complete"),
    ),
    "payment.attempt_failed": lambda t: ("payment_intent.payment_failed", _declined(t)),
    "checkout.expired": lambda t: ("checkout.session.expired", t.session("unpaid", "expired")),
    "payment.refunded": lambda t: ("charge.refunded", _refund(t, t.amount)),
    "payment.partially_refunded": lambda t: ("charge.refunded", _refund(t, t.part())),
    # A dispute carries no metadata of its own: it names the charge and the payment intent.
    "payment.disputed": lambda t: (
        "charge.dispute.created",
        objects.dispute(charge_obj=t.charge()),
    ),
    "payment.refund_failed": lambda t: ("refund.failed", _failed_refund(t)),
    # A warning names the charge and the payment intent, and no amount.
    "payment.dispute_warning": lambda t: (
        "radar.early_fraud_warning.created",
        objects.early_fraud_warning(charge_obj=t.charge()),
    ),
    "payment.dispute_closed": lambda t: (
        "charge.dispute.closed",
        objects.dispute(charge_obj=t.charge(), status="won"),
    ),
    "subscription.created": lambda t: (
        "customer.subscription.created",
        t.subscription_obj("active"),
    ),
    "subscription.updated": lambda t: (
        "customer.subscription.updated",
        t.subscription_obj("active"),
    ),
    "subscription.past_due": lambda t: (
        "customer.subscription.updated",
        t.subscription_obj("past_due"),
    ),
    "subscription.canceled": lambda t: (
        "customer.subscription.deleted",
        t.subscription_obj("canceled"),
    ),
    "subscription.payment_succeeded": lambda t: ("invoice.paid", t.invoice(paid=True)),
    "subscription.payment_failed": lambda t: ("invoice.payment_failed", t.invoice(paid=False)),
}

SUPPORTED_TRIGGERS: tuple[str, ...] = tuple(sorted(_TRIGGERS))


def _copy(value: Any) -> Any:
    """A deep copy of JSON data, so a later change to the simulator's object does not rewrite
    an event already recorded."""
    if isinstance(value, Mapping):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value
