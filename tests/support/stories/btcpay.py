"""BTCPay invoice stories for convergence (CONTRACT 2), delivered by hand (the simulator's own
object builders) so each story can be shuffled, with retries and redeliveries (a new
``deliveryId``, the first one's ``originalDeliveryId``).

``STORIES`` are played in every order by tests/contract (test_convergence_contract.py);
``CONTRADICTED`` by tests/e2e/test_btcpay_convergence.py."""

from __future__ import annotations

from typing import Any

from support.btcpay_shop import BTCPayShop

from edge.sim.btcpay import objects

# (BTCPay type, seconds after the invoice was made, the type's own fields)
Story = list[tuple[str, int, dict[str, Any]]]
PAID = {"afterExpiration": False, "paymentMethodId": "BTC-CHAIN"}
LATE = {"afterExpiration": True, "paymentMethodId": "BTC-CHAIN"}

SETTLED = {"manuallyMarked": False, "overPaid": False}
MARKED_SETTLED = {"manuallyMarked": True, "overPaid": False}
# Marking by hand sends one InvoiceSettled or InvoiceInvalid with manuallyMarked true and nothing
# else, in every state BTCPay allows it (btcpayserver@03345c28 InvoiceEntity.cs:804-822,
# InvoiceRepository.cs:630-676, InvoiceTriggerProvider.cs:152-159); the simulator's
# tests/sim/test_btcpay_sim.py checks that it sends them so.
STORIES: dict[str, tuple[Story, tuple[str, int, bool]]] = {
    "paid and settled": (
        [
            ("InvoiceReceivedPayment", 10, PAID),
            ("InvoiceProcessing", 11, {"overPaid": False}),
            ("InvoicePaymentSettled", 600, PAID),
            ("InvoiceSettled", 601, SETTLED),
        ],
        ("succeeded", 3, False),
    ),
    "processing, replaced, then expired": (
        [
            ("InvoiceReceivedPayment", 10, PAID),
            ("InvoiceProcessing", 11, {"overPaid": False}),
            ("InvoiceExpired", 900, {"partiallyPaid": False}),
        ],
        ("expired", 3, False),
    ),
    "processing then invalid": (
        [
            ("InvoiceProcessing", 11, {"overPaid": False}),
            ("InvoiceInvalid", 86400, {"manuallyMarked": False}),
        ],
        ("failed", 3, False),
    ),
    "expired, then paid after expiration": (
        [
            ("InvoiceExpired", 900, {"partiallyPaid": False}),
            ("InvoiceReceivedPayment", 1000, LATE),
            ("InvoicePaidAfterExpiration", 1000, {}),
        ],
        ("expired", 2, True),
    ),
    "part paid, then expired": (
        [
            ("InvoiceReceivedPayment", 10, PAID),
            ("InvoiceExpired", 900, {"partiallyPaid": True}),
            ("InvoiceExpiredPaidPartial", 900, {}),
        ],
        ("expired", 2, True),
    ),
    "marked settled while new": (
        [("InvoiceSettled", 300, MARKED_SETTLED)],
        ("succeeded", 2, False),
    ),
    "marked settled while processing": (
        [
            ("InvoiceReceivedPayment", 10, PAID),
            ("InvoiceProcessing", 11, {"overPaid": False}),
            ("InvoiceSettled", 300, MARKED_SETTLED),
        ],
        ("succeeded", 3, False),
    ),
    "marked invalid while new": (
        [("InvoiceInvalid", 300, {"manuallyMarked": True})],
        ("failed", 2, False),
    ),
    "marked invalid while processing": (
        [
            ("InvoiceReceivedPayment", 10, PAID),
            ("InvoiceProcessing", 11, {"overPaid": False}),
            ("InvoiceInvalid", 300, {"manuallyMarked": True}),
        ],
        ("failed", 3, False),
    ),
}

# Stories that say both that the invoice was paid and that it ended unpaid (CONTRACT 2: the
# merchant is told, needsAttention, in every order). The first element is where in-order
# delivery ends; the second, where the record ends when the other of the two (the success, or
# the ending) reaches the node first: a success is never taken back, a terminal status never
# left.
CONTRADICTED: dict[str, tuple[Story, tuple[str, int, bool], tuple[str, int]]] = {
    # was "marked settled -> paid late, never a success" before issue 24: BTCPay allows
    # marking settled from Expired (CanMarkComplete), and it is money for an ended checkout
    "expired, then marked settled by hand": (
        [
            ("InvoiceExpired", 900, {"partiallyPaid": False}),
            ("InvoiceSettled", 5000, MARKED_SETTLED),
        ],
        ("expired", 2, True),
        ("succeeded", 2),
    ),
    "invalid, then marked settled by hand": (
        [
            ("InvoiceProcessing", 11, {"overPaid": False}),
            ("InvoiceInvalid", 86400, {"manuallyMarked": False}),
            ("InvoiceSettled", 90000, MARKED_SETTLED),
        ],
        ("failed", 3, True),
        ("succeeded", 3),
    ),
    # was "settled, then marked invalid by hand" with needsAttention false: BTCPay cannot mark
    # an invoice the chain settled (CanMarkInvalid needs New, Processing, Expired, or a marked
    # one); it can mark invalid one that was marked settled, and may then offer a refund
    # (CanRefund: Settled or Invalid, InvoiceEntity.cs:824-832)
    "marked settled, then marked invalid by hand, and a refund offered": (
        [
            ("InvoiceSettled", 601, MARKED_SETTLED),
            ("InvoiceInvalid", 7000, {"manuallyMarked": True}),
            ("InvoiceRefund", 7200, {}),
        ],
        ("succeeded", 2, True),
        ("failed", 2),
    ),
    "marked invalid, then marked settled by hand": (
        [
            ("InvoiceInvalid", 300, {"manuallyMarked": True}),
            ("InvoiceSettled", 7000, MARKED_SETTLED),
        ],
        ("failed", 2, True),
        ("succeeded", 2),
    ),
}


class Deliveries:
    """One story's deliveries for one transaction: the first of each, and a retry (a new
    delivery id) every time one is sent again."""

    def __init__(self, shop: BTCPayShop, tx: str, invoice: str, story: Story) -> None:
        self.shop, self.firsts, self.sent = shop, [], set()
        base = 1_795_254_528
        for n, (event_type, at, fields) in enumerate(story):
            delivery_id = f"D{n}{tx[-12:]}"
            self.firsts.append(
                objects.delivery(
                    event_type,
                    webhook_id=shop.webhook_id,
                    delivery_id=delivery_id,
                    original_delivery_id=delivery_id,
                    is_redelivery=False,
                    timestamp=base + at,
                    store_id=shop.store_id,
                    invoice_id=invoice,
                    metadata={"orderId": tx},
                    **fields,
                )
            )

    def body(self, index: int) -> bytes:
        event = self.firsts[index]
        if index in self.sent:
            event = {**event, "deliveryId": objects.btcpay_id(), "isRedelivery": True}
        self.sent.add(index)
        return objects.body(event)
