from edge.domain.events import QUOTA_EXEMPT, EventType

CONTRACT_TYPES = [
    "checkout.created",
    "payment.processing",
    "payment.succeeded",
    "payment.attempt_failed",
    "payment.failed",
    "checkout.expired",
    "checkout.canceled",
    "payment.refunded",
    "payment.partially_refunded",
    "payment.disputed",
    "payment.dispute_closed",
    "subscription.created",
    "subscription.updated",
    "subscription.past_due",
    "subscription.canceled",
    "subscription.payment_succeeded",
    "subscription.payment_failed",
    "manual.marked_paid",
    "payment.paid_late",
    # CONTRACT 4.3: money that is not what the checkout asked for
    "payment.amount_mismatch",
    # CONTRACT 4.3a: every money event after the payment, and the merchant's word on it
    "payment.refund_failed",
    "payment.dispute_warning",
    "payment.resolved",
    "unmatched",
]


def test_exactly_the_contract_types():
    assert len(CONTRACT_TYPES) == 24
    assert sorted(e.value for e in EventType) == sorted(CONTRACT_TYPES)


def test_member_names_mirror_values():
    for e in EventType:
        assert e.name == e.value.upper().replace(".", "_")
    assert EventType.MANUAL_MARKED_PAID == "manual.marked_paid"
    assert EventType("payment.succeeded") is EventType.PAYMENT_SUCCEEDED


def test_quota_exempt():
    assert frozenset({EventType.CHECKOUT_CREATED}) == QUOTA_EXEMPT
