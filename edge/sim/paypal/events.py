"""Simulated PayPal deliveries for ``edge trigger``: an event the PayPal adapter normalizes to a
given node type, for one of the node's transactions.

Each event is about the transaction's own PayPal objects, as the node matches them (CONTRACT
4.3): the order it created (``providerRef``), that order's capture (named as the simulator
names it, ``objects.capture_id_of``), and the subscription it created. A refund or a dispute
triggered after a triggered (or simulated) payment names the capture the node linked then.
Amounts are the transaction's. ``custom_id`` and ``invoice_id`` carry the transaction id as the
node's own order does; the node never matches by them."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any

from edge.domain.money import EXPONENTS
from edge.sim.paypal import objects

BASE = "https://api-m.sandbox.paypal.com"


class _Tx:
    """The parts of a node transaction the builders need, with defaults for missing ones."""

    def __init__(self, tx: Mapping[str, Any]) -> None:
        self.id: str = tx["id"]
        self.currency: str = str(tx.get("currency") or "EUR")
        minor = Decimal(int(tx.get("amount") or 0)).scaleb(-EXPONENTS.get(self.currency, 2))
        self.value = objects.value_of(minor, self.currency)
        self.subscription = tx.get("kind") == "subscription"
        ref = tx.get("subscriptionRef") or tx.get("providerRef")
        self.order_id: str = tx.get("providerRef") or objects.paypal_id()
        self.subscription_id: str = (
            ref if self.subscription and ref else "I-" + objects.paypal_id(12)
        )

    def order(self, status: str = "APPROVED") -> dict[str, Any]:
        return {
            "id": self.order_id,
            "intent": "CAPTURE",
            "status": status,
            "purchase_units": [
                {
                    "reference_id": "default",
                    "custom_id": self.id,
                    "invoice_id": self.id,
                    "amount": objects.money(self.currency, self.value),
                }
            ],
        }

    def capture(self, status: str) -> dict[str, Any]:
        return objects.capture(BASE, self.order(), status)

    def subscription_obj(self, status: str) -> dict[str, Any]:
        return {"id": self.subscription_id, "status": status, "custom_id": self.id}


def _refund(tx: _Tx, part: bool) -> tuple[str, dict[str, Any]]:
    capture = tx.capture("COMPLETED")
    amount = objects.money(tx.currency, tx.value)
    if part:  # the smallest amount PayPal refunds
        smallest = Decimal(1).scaleb(-objects.decimals(tx.currency))
        amount = objects.money(tx.currency, objects.value_of(smallest, tx.currency))
    return "PAYMENT.CAPTURE.REFUNDED", objects.refund(BASE, capture, amount, amount)


def _dispute(tx: _Tx, outcome: str | None, stage: str = "CHARGEBACK") -> tuple[str, dict[str, Any]]:
    """A dispute of the transaction's capture: opened at ``stage`` (an ``INQUIRY`` is only a
    warning; a ``CHARGEBACK`` stage dispute is a claim, as PayPal opens every dispute for a
    merchant who opted out of inquiries), or resolved after a claim with ``outcome``."""
    dispute = objects.dispute(BASE, tx.capture("COMPLETED"), stage=stage)
    if outcome is None:
        return "CUSTOMER.DISPUTE.CREATED", dispute
    dispute.update(status="RESOLVED", dispute_outcome={"outcome_code": outcome})
    return "CUSTOMER.DISPUTE.RESOLVED", dispute


def _sale(tx: _Tx) -> tuple[str, dict[str, Any]]:
    price = objects.money(tx.currency, tx.value)
    return "PAYMENT.SALE.COMPLETED", objects.sale(BASE, tx.subscription_obj("ACTIVE"), price)


_TRIGGERS: Mapping[str, Callable[[_Tx], tuple[str, dict[str, Any]]]] = {
    "payment.succeeded": lambda tx: ("PAYMENT.CAPTURE.COMPLETED", tx.capture("COMPLETED")),
    "payment.processing": lambda tx: ("PAYMENT.CAPTURE.PENDING", tx.capture("PENDING")),
    "payment.failed": lambda tx: ("PAYMENT.CAPTURE.DECLINED", tx.capture("DECLINED")),
    "payment.refunded": lambda tx: _refund(tx, part=False),
    "payment.partially_refunded": lambda tx: _refund(tx, part=True),
    "payment.dispute_warning": lambda tx: _dispute(tx, None, "INQUIRY"),
    "payment.disputed": lambda tx: _dispute(tx, None),
    "payment.dispute_closed": lambda tx: _dispute(tx, "RESOLVED_SELLER_FAVOUR"),
    "subscription.payment_succeeded": _sale,
    "subscription.payment_failed": lambda tx: (
        "BILLING.SUBSCRIPTION.PAYMENT.FAILED",
        tx.subscription_obj("ACTIVE"),
    ),
    "subscription.updated": lambda tx: (
        "BILLING.SUBSCRIPTION.SUSPENDED",
        tx.subscription_obj("SUSPENDED"),
    ),
    "subscription.canceled": lambda tx: (
        "BILLING.SUBSCRIPTION.CANCELLED",
        tx.subscription_obj("CANCELLED"),
    ),
}

SUPPORTED_TRIGGERS: tuple[str, ...] = tuple(sorted(_TRIGGERS))


def event_for_trigger(normalized_type: str, tx: Mapping[str, Any]) -> dict[str, Any]:
    """A PayPal event that the PayPal adapter normalizes to ``normalized_type`` for the node's
    transaction record ``tx`` (id, amount in minor units, currency, kind, providerRef,
    subscriptionRef). ValueError for a type it cannot produce, naming those it can."""
    build = _TRIGGERS.get(normalized_type)
    if build is None:
        raise ValueError(
            f"cannot simulate a PayPal {normalized_type!r} event; supported: "
            + ", ".join(SUPPORTED_TRIGGERS)
        )
    event_type, resource = build(_Tx(tx))
    return objects.envelope(BASE, event_type, resource)
