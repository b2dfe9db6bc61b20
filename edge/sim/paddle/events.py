"""Simulated Paddle notifications for ``edge trigger``: an event the Paddle adapter normalizes
to a given node type, for one of the node's transactions, built from the simulator's own
entities (``objects``).

The entities name what the node matches on, the Paddle objects it linked to the transaction:
the checkout's own ``txn_`` (its ``providerRef``, made through the API: ``origin: api``), the
subscription that checkout started, and, for adjustments, that ``txn_`` as their
``transaction_id``. They carry the transaction's real amount and currency, so a trigger is
never an amount mismatch; ``custom_data`` carries its txId and customerRef as the node set
them, which is history, not a match."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from edge.sim.paddle import objects

BASE = "https://sandbox-checkout.paddle.com"


class _Tx:
    """The parts of a node transaction the builders need, with defaults for missing ones."""

    def __init__(self, tx: Mapping[str, Any]) -> None:
        self.tx = tx
        self.subscription = tx.get("kind") == "subscription"
        ref = tx.get("providerRef")
        self.txn_id: str = ref if isinstance(ref, str) and ref.startswith("txn_") else ""
        sub = tx.get("subscriptionRef")
        self.sub_id: str = sub if isinstance(sub, str) and sub.startswith("sub_") else ""
        customer = tx.get("providerCustomer")
        self.customer: str = (
            customer if isinstance(customer, str) and customer.startswith("ctm_") else ""
        )

    def transaction(self, origin: str = "api") -> dict[str, Any]:
        """The checkout's transaction (or, ``subscription_recurring``, a renewal of it),
        unpaid and with its customer."""
        tx, at = self.tx, objects.now_iso()
        currency = str(tx.get("currency") or "EUR")
        name = str(tx.get("description") or "Simulated item")
        given: dict[str, Any] = {
            "description": name,
            "name": name,
            "unit_price": {"amount": str(int(tx.get("amount") or 0)), "currency_code": currency},
        }
        if self.subscription:
            given["billing_cycle"] = {
                "interval": str(tx.get("interval") or "month"),
                "frequency": 1,
            }
        item_product = objects.product({"name": name}, at)
        custom = {
            "txId": tx["id"],
            **({"customerRef": tx["customerRef"]} if tx.get("customerRef") else {}),
        }
        txn = objects.transaction(
            BASE,
            [(objects.price(given, item_product["id"], at), item_product, 1)],
            currency,
            custom,
            origin,
        )
        if origin == "api" and self.txn_id:
            txn["id"] = self.txn_id
            txn["checkout"] = {"url": f"{BASE}/pay?_ptxn={self.txn_id}"}
        self.customer = self.customer or objects.paddle_id("ctm")
        txn.update(status="ready", customer_id=self.customer, address_id=objects.paddle_id("add"))
        if self.subscription:
            self.sub_id = self.sub_id or objects.paddle_id("sub")
            start = objects.now_iso()
            txn["billing_period"] = {
                "starts_at": start,
                "ends_at": objects.later(start, given["billing_cycle"]),
            }
        return txn

    def paid(self, origin: str = "api") -> dict[str, Any]:
        txn = self.transaction(origin)
        txn["payments"].insert(0, objects.payment_attempt(txn, declined=False))
        objects.settle(txn, "completed")
        if self.subscription:
            txn["subscription_id"] = self.sub_id
        return txn

    def declined(self, origin: str = "api") -> dict[str, Any]:
        txn = self.transaction(origin)
        txn["payments"].insert(0, objects.payment_attempt(txn, declined=True))
        if origin != "api":
            txn.update(subscription_id=self.sub_id, checkout=None)
        return txn

    def subscription_entity(self, status: str) -> dict[str, Any]:
        sub = objects.subscription(self.paid())
        sub.update(id=self.sub_id, status=status)
        return sub

    def adjustment(self, action: str, part: bool, status: str = "approved") -> dict[str, Any]:
        return objects.adjustment(self.paid(), action, 1 if part else None, "Simulated", status)


def _canceled(tx: _Tx) -> dict[str, Any]:
    txn = tx.transaction()
    txn["status"] = "canceled"
    return txn


_TRIGGERS: Mapping[str, Callable[[_Tx], tuple[str, dict[str, Any]]]] = {
    "payment.succeeded": lambda tx: ("transaction.completed", tx.paid()),
    "payment.attempt_failed": lambda tx: ("transaction.payment_failed", tx.declined()),
    "checkout.canceled": lambda tx: ("transaction.canceled", _canceled(tx)),
    "payment.refunded": lambda tx: ("adjustment.updated", tx.adjustment("refund", part=False)),
    "payment.partially_refunded": lambda tx: (
        "adjustment.updated",
        tx.adjustment("refund", part=True),
    ),
    # a refund Paddle rejected on review (openapi.yaml adjustment.updated: "On review, they
    # move to approved or rejected")
    "payment.refund_failed": lambda tx: (
        "adjustment.updated",
        tx.adjustment("refund", part=True, status="rejected"),
    ),
    "payment.dispute_warning": lambda tx: (
        "adjustment.created",
        tx.adjustment("chargeback_warning", part=False),
    ),
    "payment.disputed": lambda tx: ("adjustment.created", tx.adjustment("chargeback", False)),
    "payment.dispute_closed": lambda tx: (
        "adjustment.created",
        tx.adjustment("chargeback_reverse", part=False),
    ),
    "subscription.created": lambda tx: ("subscription.created", tx.subscription_entity("active")),
    "subscription.updated": lambda tx: ("subscription.paused", tx.subscription_entity("paused")),
    "subscription.past_due": lambda tx: (
        "subscription.past_due",
        tx.subscription_entity("past_due"),
    ),
    "subscription.canceled": lambda tx: (
        "subscription.canceled",
        tx.subscription_entity("canceled"),
    ),
    "subscription.payment_succeeded": lambda tx: (
        "transaction.completed",
        tx.paid("subscription_recurring"),
    ),
    "subscription.payment_failed": lambda tx: (
        "transaction.payment_failed",
        tx.declined("subscription_recurring"),
    ),
}

SUPPORTED_TRIGGERS: tuple[str, ...] = tuple(sorted(_TRIGGERS))


def event_for_trigger(normalized_type: str, tx: Mapping[str, Any]) -> dict[str, Any]:
    """A Paddle notification that the Paddle adapter normalizes to ``normalized_type`` for the
    node's transaction record ``tx`` (id, amount in minor units, currency, kind, interval,
    customerRef, providerRef, subscriptionRef, providerCustomer). ValueError for a type it
    cannot produce, naming those it can."""
    build = _TRIGGERS.get(normalized_type)
    if build is None:
        raise ValueError(
            f"cannot simulate a Paddle {normalized_type!r} event; supported: "
            + ", ".join(SUPPORTED_TRIGGERS)
        )
    event_type, data = build(_Tx(tx))
    return objects.envelope(event_type, data)
