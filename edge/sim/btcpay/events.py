"""Simulated BTCPay deliveries for ``edge trigger``: an invoice event the BTCPay adapter
normalizes to a given node type, for one of the node's transactions (its invoice is the
transaction's ``providerRef``; ``metadata.orderId`` names the transaction, as the node set it).

What BTCPay cannot send, and so neither can this: no webhook of BTCPay's is a refund of its own
(``InvoiceRefund`` names a pull payment the node then reads, and a payout event says nothing of
the amount: ``edge.providers.btcpay.events``), so ``payment.refunded``,
``payment.partially_refunded`` and ``payment.refund_failed`` (an archived pull payment, which
BTCPay does not announce) are learned by asking; there are no disputes or chargebacks on a
payment in bitcoin (``payment.dispute_warning``, ``payment.disputed``,
``payment.dispute_closed``), no declined attempt inside an open invoice
(``payment.attempt_failed``), no cancelling of an invoice by the buyer (``checkout.canceled``)
and no subscriptions."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from edge.sim.btcpay import objects

# node type -> (BTCPay type, the type's own fields)
_TRIGGERS: Mapping[str, tuple[str, dict[str, Any]]] = {
    "payment.processing": ("InvoiceProcessing", {"overPaid": False}),
    "payment.succeeded": ("InvoiceSettled", {"manuallyMarked": False, "overPaid": False}),
    "payment.failed": ("InvoiceInvalid", {"manuallyMarked": False}),
    "checkout.expired": ("InvoiceExpired", {"partiallyPaid": False}),
    "payment.paid_late": ("InvoicePaidAfterExpiration", {}),
}

SUPPORTED_TRIGGERS: tuple[str, ...] = tuple(sorted(_TRIGGERS))


def event_for_trigger(normalized_type: str, tx: Mapping[str, Any]) -> dict[str, Any]:
    """A first delivery of the BTCPay event for ``normalized_type`` about the node's
    transaction ``tx``; ValueError for a type it cannot produce, naming those it can."""
    found = _TRIGGERS.get(normalized_type)
    if found is None:
        raise ValueError(
            f"cannot simulate a BTCPay {normalized_type!r} event; supported: "
            + ", ".join(SUPPORTED_TRIGGERS)
        )
    event_type, fields = found
    delivery_id = objects.btcpay_id()
    metadata = {"orderId": tx["id"]}
    if tx.get("customerRef"):
        metadata["customerRef"] = str(tx["customerRef"])
    return objects.delivery(
        event_type,
        webhook_id=objects.btcpay_id(),
        delivery_id=delivery_id,
        original_delivery_id=delivery_id,
        is_redelivery=False,
        timestamp=objects.now_s(),
        store_id=objects.btcpay_id(44),
        invoice_id=str(tx.get("providerRef") or objects.btcpay_id()),
        metadata=metadata,
        **fields,
    )


def delivery_id(event: Mapping[str, Any]) -> str:
    """The id the node deduplicates a BTCPay delivery on."""
    return str(event.get("originalDeliveryId") or event["deliveryId"])
