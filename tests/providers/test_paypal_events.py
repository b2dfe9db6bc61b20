"""PayPal events in the node's terms (PROVIDERS.md "Event mapping"): every row of the table,
what each resource refers to, the dedup ids an object's state shares with reading it, refunds
one by one, disputes by what they are now, and bodies that are not events."""

from __future__ import annotations

import json
from typing import Any

import pytest

from edge.domain import attention
from edge.domain.changes import change_key
from edge.domain.convergence import Refund
from edge.domain.events import EventType as E
from edge.domain.status import Status as S
from edge.providers.base import REFUND_FAILED, REFUND_PENDING, REFUND_SUCCEEDED, MalformedPayload
from edge.providers.paypal import events

TX = "tx_01JD0000000000000000000001"
ORDER, CAPTURE, SUB = "5O190127TN364715T", "3C679366HH908993F", "I-BW452GLLEP1G"


def envelope(event_type: str, resource: dict[str, Any], **extra: Any) -> bytes:
    return json.dumps(
        {
            "id": "WH-2WR32451HC0233532-67976317FL4543714",
            "event_version": "1.0",
            "create_time": "2026-11-23T10:00:00.000Z",
            "event_type": event_type,
            "resource": resource,
            **extra,
        }
    ).encode()


def order(status: str = "APPROVED") -> dict[str, Any]:
    return {
        "id": ORDER,
        "status": status,
        "intent": "CAPTURE",
        "purchase_units": [
            {
                "custom_id": TX,
                "invoice_id": TX,
                "amount": {"currency_code": "EUR", "value": "19.99"},
            }
        ],
    }


def capture(status: str = "COMPLETED") -> dict[str, Any]:
    return {
        "id": CAPTURE,
        "status": status,
        "custom_id": TX,
        "invoice_id": TX,
        "amount": {"currency_code": "EUR", "value": "19.99"},
        "supplementary_data": {"related_ids": {"order_id": ORDER}},
    }


REFUND_ID, NODE_REFUND = "1JU08902781691411", "rf_01JD0000000000000000000001"


def refund(total: str, status: str = "COMPLETED", value: str = "5.00") -> dict[str, Any]:
    return {
        "id": REFUND_ID,
        "status": status,
        "custom_id": TX,
        "create_time": "2026-11-23T10:00:00Z",
        "amount": {"currency_code": "EUR", "value": value},
        "seller_payable_breakdown": {
            "total_refunded_amount": {"currency_code": "EUR", "value": total}
        },
        "links": [
            {"rel": "up", "href": f"https://api.sandbox.paypal.com/v2/payments/captures/{CAPTURE}"}
        ],
    }


DISPUTE = "PP-D-27803"


def dispute(
    outcome: str | None = None, stage: str | None = None, refunded: str | None = None
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "dispute_id": DISPUTE,
        "disputed_transactions": [
            {"seller_transaction_id": CAPTURE, "custom": TX, "invoice_number": TX}
        ],
        "dispute_amount": {"currency_code": "EUR", "value": "19.99"},
    }
    if stage:
        body["dispute_life_cycle_stage"] = stage
    if outcome:
        body["status"] = "RESOLVED"
        body["dispute_outcome"] = {"outcome_code": outcome}
        if refunded:
            body["dispute_outcome"]["amount_refunded"] = {"currency_code": "EUR", "value": refunded}
    return body


def subscription(status: str) -> dict[str, Any]:
    return {
        "id": SUB,
        "status": status,
        "custom_id": TX,
        "billing_info": {"next_billing_time": "2026-12-23T10:00:00Z"},
    }


SALE = {
    "id": "80021663DE681814L",
    "state": "completed",
    "amount": {"total": "9.00", "currency": "EUR"},
    "billing_agreement_id": SUB,
}

DC, SU, SC = E.PAYMENT_DISPUTE_CLOSED, E.SUBSCRIPTION_UPDATED, E.SUBSCRIPTION_CANCELED
SF, sub, DW = E.SUBSCRIPTION_PAYMENT_FAILED, subscription, E.PAYMENT_DISPUTE_WARNING
INQ, CB, ARB, PD = "INQUIRY", "CHARGEBACK", "ARBITRATION", E.PAYMENT_DISPUTED

ROWS = [
    ("CHECKOUT.ORDER.APPROVED", order(), E.PAYMENT_PROCESSING, None, None),
    ("CHECKOUT.PAYMENT-APPROVAL.REVERSED", order(), E.PAYMENT_FAILED, S.FAILED, None),
    ("PAYMENT.CAPTURE.COMPLETED", capture(), E.PAYMENT_SUCCEEDED, S.SUCCEEDED, None),
    ("PAYMENT.CAPTURE.PENDING", capture("PENDING"), E.PAYMENT_PROCESSING, S.PROCESSING, None),
    ("PAYMENT.CAPTURE.DECLINED", capture("DECLINED"), E.PAYMENT_FAILED, S.FAILED, None),
    ("PAYMENT.CAPTURE.DENIED", capture("DECLINED"), E.PAYMENT_FAILED, S.FAILED, None),
    ("PAYMENT.CAPTURE.REFUNDED", refund("19.99"), E.PAYMENT_REFUNDED, S.REFUNDED, None),
    # still pending (an eCheck's, as asking reads it): history, nothing given back yet
    ("PAYMENT.CAPTURE.REFUNDED", refund("5.00", "PENDING"), E.UNMATCHED, None, None),
    ("PAYMENT.CAPTURE.REFUNDED", refund("0.00", "FAILED"), E.PAYMENT_REFUND_FAILED, None, None),
    ("PAYMENT.CAPTURE.REFUNDED", refund("0.00", "CANCELLED"), E.PAYMENT_REFUND_FAILED, None, None),
    ("PAYMENT.CAPTURE.REVERSED", refund("19.99"), E.PAYMENT_REFUNDED, S.REFUNDED, None),
    ("CUSTOMER.DISPUTE.CREATED", dispute(), E.PAYMENT_DISPUTED, S.DISPUTED, None),
    ("CUSTOMER.DISPUTE.CREATED", dispute(stage=INQ), DW, None, None),
    ("CUSTOMER.DISPUTE.CREATED", dispute(stage=CB), E.PAYMENT_DISPUTED, S.DISPUTED, None),
    ("CUSTOMER.DISPUTE.UPDATED", dispute(stage=INQ), DW, None, None),
    ("CUSTOMER.DISPUTE.UPDATED", dispute(stage=CB), E.PAYMENT_DISPUTED, S.DISPUTED, None),
    ("CUSTOMER.DISPUTE.UPDATED", dispute(stage=ARB), PD, S.DISPUTED, None),
    ("CUSTOMER.DISPUTE.RESOLVED", dispute("RESOLVED_SELLER_FAVOUR"), DC, S.SUCCEEDED, None),
    ("CUSTOMER.DISPUTE.RESOLVED", dispute("CANCELED_BY_BUYER"), DC, S.SUCCEEDED, None),
    ("CUSTOMER.DISPUTE.RESOLVED", dispute("RESOLVED_BUYER_FAVOUR"), DC, S.REFUNDED, None),
    ("CUSTOMER.DISPUTE.RESOLVED", dispute("ACCEPTED", CB), DC, S.REFUNDED, None),
    ("CUSTOMER.DISPUTE.RESOLVED", dispute("RESOLVED_BUYER_FAVOUR", INQ), DC, None, None),
    ("CUSTOMER.DISPUTE.RESOLVED", dispute("CANCELED_BY_BUYER", INQ), DC, None, None),
    ("BILLING.SUBSCRIPTION.CREATED", sub("APPROVAL_PENDING"), E.SUBSCRIPTION_CREATED, None, None),
    ("BILLING.SUBSCRIPTION.ACTIVATED", sub("ACTIVE"), SU, None, S.ACTIVE),
    ("BILLING.SUBSCRIPTION.UPDATED", sub("SUSPENDED"), SU, None, S.PAUSED),
    ("BILLING.SUBSCRIPTION.SUSPENDED", sub("SUSPENDED"), SU, None, S.PAUSED),
    ("BILLING.SUBSCRIPTION.CANCELLED", sub("CANCELLED"), SC, None, S.CANCELED),
    ("BILLING.SUBSCRIPTION.EXPIRED", sub("EXPIRED"), SC, None, S.CANCELED),
    ("BILLING.SUBSCRIPTION.PAYMENT.FAILED", sub("ACTIVE"), SF, None, S.PAST_DUE),
    ("PAYMENT.SALE.COMPLETED", SALE, E.SUBSCRIPTION_PAYMENT_SUCCEEDED, S.SUCCEEDED, S.ACTIVE),
]  # fmt: skip


@pytest.mark.parametrize(("paypal_type", "resource", "normalized", "payment", "sub"), ROWS)
def test_every_row_of_the_table(paypal_type, resource, normalized, payment, sub):
    event = events.normalize(envelope(paypal_type, resource))
    assert (event.type, event.payment_status, event.subscription_status) == (
        normalized,
        payment,
        sub,
    )
    assert event.provider_type == paypal_type
    assert event.provider_event_id == "WH-2WR32451HC0233532-67976317FL4543714"
    assert event.occurred_at_ms == 1795428000000
    if paypal_type != "PAYMENT.SALE.COMPLETED":
        assert event.tx_id == TX


def test_every_mapped_type_is_tested():
    assert {row[0] for row in ROWS} == set(events.HANDLED_EVENT_TYPES)


def test_an_approved_order_owes_a_capture_and_moves_nothing():
    event = events.normalize(envelope("CHECKOUT.ORDER.APPROVED", order()))
    assert [(f.action, dict(f.params)) for f in event.follow_ups] == [
        ("capture", {"orderId": ORDER})
    ]
    assert event.refs == (ORDER,)
    unapproved = events.normalize(envelope("CHECKOUT.ORDER.APPROVED", order("CREATED")))
    assert unapproved.follow_ups == ()


def test_a_capture_counts_once_whether_its_answer_or_its_webhook_comes_first():
    webhook = events.normalize(envelope("PAYMENT.CAPTURE.COMPLETED", capture()))
    completed = {**order("COMPLETED")}
    completed["purchase_units"] = [
        {**completed["purchase_units"][0], "payments": {"captures": [capture()]}}
    ]
    answered = events.capture_event(completed)
    assert answered is not None
    shared = f"capture:{CAPTURE}:COMPLETED"
    assert webhook.dedup_ids == (webhook.provider_event_id, shared)
    assert answered.dedup_ids == (shared,)
    assert (answered.type, answered.payment_status, answered.tx_id) == (
        E.PAYMENT_SUCCEEDED,
        S.SUCCEEDED,
        TX,
    )
    assert (answered.amount_minor, answered.currency) == (1999, "EUR")
    assert set(answered.refs) == {ORDER, CAPTURE}


def test_an_answer_without_a_capture_is_none():
    assert events.capture_event(order("APPROVED")) is None


def test_a_refund_is_one_step_of_its_own_amount_under_its_id():
    """Not the total refunded so far: the node sums each named refund once."""
    event = events.normalize(envelope("PAYMENT.CAPTURE.REFUNDED", refund("15.00")))
    assert event.refund == Refund(500, REFUND_ID) and event.refs[:2] == (CAPTURE, REFUND_ID)
    assert event.dedup_ids == (event.provider_event_id, f"refund:{REFUND_ID}:COMPLETED")
    assert event.change is None  # the node names a refund by its refund id
    assert change_key(event.type, refund_of=event.refund.of) == f"refund:{REFUND_ID}"
    reversed_ = events.normalize(envelope("PAYMENT.CAPTURE.REVERSED", refund("19.99")))
    assert reversed_.refund == Refund(500, REFUND_ID) and reversed_.provider_refund is None


def test_a_refund_says_what_the_node_tagged_it_with_and_how_it_stands():
    tagged = {**refund("5.00", "PENDING"), "custom_id": NODE_REFUND}
    tagged["status_details"] = {"reason": "ECHECK"}
    event = events.normalize(envelope("PAYMENT.CAPTURE.REFUNDED", tagged))
    seen = event.provider_refund
    assert seen is not None
    assert (seen.id, seen.amount_minor, seen.state, seen.tag) == (
        REFUND_ID,
        500,
        REFUND_PENDING,
        NODE_REFUND,
    )
    assert seen.created_ms == 1795428000000 and seen.detail == "ECHECK"
    assert event.tx_id is None  # the tag is not a transaction id: matched by the capture
    states = {s: events.provider_refund(refund("1.00", s)).state for s in events.REFUND_STATES}
    assert states == {
        "COMPLETED": REFUND_SUCCEEDED,
        "PENDING": REFUND_PENDING,
        "CANCELLED": REFUND_FAILED,
        "FAILED": REFUND_FAILED,
    }


def test_a_refund_that_failed_gives_nothing_back_and_is_flagged():
    event = events.normalize(envelope("PAYMENT.CAPTURE.REFUNDED", refund("0.00", "FAILED")))
    assert (event.type, event.payment_status) == (E.PAYMENT_REFUND_FAILED, None)
    assert event.refund == Refund(500, REFUND_ID)  # taken off what the refund had counted
    assert event.attention == attention.REFUND_FAILED and event.change == REFUND_ID
    assert change_key(event.type, named=event.change) == f"payment.refund_failed:{REFUND_ID}"


def test_a_dispute_is_what_it_is_now_named_by_its_id():
    warned = events.normalize(envelope("CUSTOMER.DISPUTE.CREATED", dispute(stage=INQ)))
    assert (warned.type, warned.change, warned.attention) == (
        DW,
        DISPUTE,
        attention.DISPUTE_WARNING,
    )
    assert (warned.amount_minor, warned.refs) == (1999, (CAPTURE,))
    escalated = events.normalize(envelope("CUSTOMER.DISPUTE.UPDATED", dispute(stage=CB)))
    assert (escalated.type, escalated.change) == (E.PAYMENT_DISPUTED, DISPUTE)
    assert escalated.dedup_ids[1] == f"dispute:{DISPUTE}:claim"
    # a later update of the claim (evidence, a message) is the same state: one change
    again = events.normalize(envelope("CUSTOMER.DISPUTE.UPDATED", dispute(stage="PRE_ARBITRATION")))
    assert again.dedup_ids[1] == escalated.dedup_ids[1]
    won = events.normalize(envelope("CUSTOMER.DISPUTE.RESOLVED", dispute("DENIED", CB)))
    assert (won.payment_status, won.refund, won.attention) == (
        S.SUCCEEDED,
        None,
        attention.DISPUTE_WON,
    )


def test_a_dispute_lost_gives_back_what_was_refunded_under_its_id():
    whole = events.normalize(envelope("CUSTOMER.DISPUTE.RESOLVED", dispute("ACCEPTED", CB)))
    assert whole.refund == Refund(1999, DISPUTE) and whole.attention == attention.DISPUTE_LOST
    part = dispute("RESOLVED_BUYER_FAVOUR", CB, refunded="7.50")
    partial = events.normalize(envelope("CUSTOMER.DISPUTE.RESOLVED", part))
    assert partial.refund == Refund(750, DISPUTE) and partial.payment_status == S.REFUNDED
    assert (partial.amount_minor, partial.change) == (750, DISPUTE)


def test_a_dispute_resolved_while_an_inquiry_waits_for_no_opening():
    """Never escalated, it was never ``disputed``: a closing that asked for a move would wait
    for an opening for ever. PayPal settles an inquiry by a refund it reports on its own
    (``make-offer``: "PayPal automatically makes a refund"), so its money is not counted here."""
    for outcome, flag in [
        ("RESOLVED_BUYER_FAVOUR", attention.DISPUTE_LOST),
        ("CANCELED_BY_BUYER", attention.DISPUTE_WON),
    ]:
        event = events.normalize(envelope("CUSTOMER.DISPUTE.RESOLVED", dispute(outcome, INQ)))
        assert (event.type, event.payment_status, event.refund) == (DC, None, None)
        assert (event.attention, event.change) == (flag, DISPUTE)


def test_an_approved_order_shares_its_dedup_id_with_reading_it():
    event = events.normalize(envelope("CHECKOUT.ORDER.APPROVED", order()))
    assert event.dedup_ids == (event.provider_event_id, f"order:{ORDER}:APPROVED")
    read = events.resource_event("CHECKOUT.ORDER.APPROVED", order())
    assert read.dedup_ids == (f"order:{ORDER}:APPROVED",) and read.follow_ups == event.follow_ups
    # the approval's reversal shows the order APPROVED too: it is not the approval again
    reversal = events.normalize(envelope("CHECKOUT.PAYMENT-APPROVAL.REVERSED", order()))
    assert reversal.dedup_ids == (reversal.provider_event_id,) and reversal.follow_ups == ()


def test_a_subscription_payment_names_its_subscription_and_may_start_it():
    event = events.normalize(envelope("PAYMENT.SALE.COMPLETED", SALE))
    assert event.subscription_ref == SUB and event.refs[0] == SUB
    assert event.starts_subscription and event.change == SALE["id"]
    assert event.dedup_ids[1] == f"sale:{SALE['id']}:COMPLETED"
    assert (event.amount_minor, event.currency) == (900, "EUR")
    one_off = events.normalize(
        envelope("PAYMENT.SALE.COMPLETED", {**SALE, "billing_agreement_id": None})
    )
    assert one_off.type == E.UNMATCHED and not one_off.starts_subscription


def test_an_unknown_type_is_kept_as_history():
    event = events.normalize(envelope("VAULT.PAYMENT-TOKEN.CREATED", {"id": "8kk8451t"}))
    assert (event.type, event.payment_status, event.refs) == (E.UNMATCHED, None, ("8kk8451t",))


def test_a_dispute_without_a_known_outcome_moves_nothing():
    event = events.normalize(envelope("CUSTOMER.DISPUTE.RESOLVED", dispute("SOMETHING_NEW")))
    assert event.type == E.UNMATCHED and event.payment_status is None


def test_a_custom_id_that_is_not_a_transaction_id_is_not_trusted():
    event = events.normalize(
        envelope("PAYMENT.CAPTURE.COMPLETED", {**capture(), "custom_id": "x", "invoice_id": None})
    )
    assert event.tx_id is None and event.refs == (ORDER, CAPTURE)


@pytest.mark.parametrize(
    "body",
    [
        b"not json",
        b"[]",
        b'{"id": "WH-1", "event_type": "PAYMENT.CAPTURE.COMPLETED"}',
        b'{"event_type": "PAYMENT.CAPTURE.COMPLETED", "resource": {}}',
        b'{"id": "WH-1", "resource": {}}',
        b"\xff\xfe",
    ],
)
def test_a_body_that_is_not_an_event_is_malformed(body):
    with pytest.raises(MalformedPayload):
        events.normalize(body)
