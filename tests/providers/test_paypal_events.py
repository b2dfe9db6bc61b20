"""PayPal events in the node's terms (PROVIDERS.md "Event mapping"): every row of the table,
what each resource refers to, the capture's shared dedup id, and bodies that are not events."""

from __future__ import annotations

import json
from typing import Any

import pytest

from edge.domain.convergence import Refund
from edge.domain.events import EventType as E
from edge.domain.status import Status as S
from edge.providers.base import MalformedPayload
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


def refund(total: str) -> dict[str, Any]:
    return {
        "id": "1JU08902781691411",
        "status": "COMPLETED",
        "custom_id": TX,
        "amount": {"currency_code": "EUR", "value": "5.00"},
        "seller_payable_breakdown": {
            "total_refunded_amount": {"currency_code": "EUR", "value": total}
        },
        "links": [
            {"rel": "up", "href": f"https://api.sandbox.paypal.com/v2/payments/captures/{CAPTURE}"}
        ],
    }


def dispute(outcome: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "dispute_id": "PP-D-27803",
        "disputed_transactions": [
            {"seller_transaction_id": CAPTURE, "custom": TX, "invoice_number": TX}
        ],
        "dispute_amount": {"currency_code": "EUR", "value": "19.99"},
    }
    if outcome:
        body["dispute_outcome"] = {"outcome_code": outcome}
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
SF, sub = E.SUBSCRIPTION_PAYMENT_FAILED, subscription

ROWS = [
    ("CHECKOUT.ORDER.APPROVED", order(), E.PAYMENT_PROCESSING, None, None),
    ("CHECKOUT.PAYMENT-APPROVAL.REVERSED", order(), E.PAYMENT_FAILED, S.FAILED, None),
    ("PAYMENT.CAPTURE.COMPLETED", capture(), E.PAYMENT_SUCCEEDED, S.SUCCEEDED, None),
    ("PAYMENT.CAPTURE.PENDING", capture("PENDING"), E.PAYMENT_PROCESSING, S.PROCESSING, None),
    ("PAYMENT.CAPTURE.DECLINED", capture("DECLINED"), E.PAYMENT_FAILED, S.FAILED, None),
    ("PAYMENT.CAPTURE.DENIED", capture("DECLINED"), E.PAYMENT_FAILED, S.FAILED, None),
    ("PAYMENT.CAPTURE.REFUNDED", refund("19.99"), E.PAYMENT_REFUNDED, S.REFUNDED, None),
    ("PAYMENT.CAPTURE.REVERSED", refund("19.99"), E.PAYMENT_REFUNDED, S.REFUNDED, None),
    ("CUSTOMER.DISPUTE.CREATED", dispute(), E.PAYMENT_DISPUTED, S.DISPUTED, None),
    ("CUSTOMER.DISPUTE.RESOLVED", dispute("RESOLVED_SELLER_FAVOUR"), DC, S.SUCCEEDED, None),
    ("CUSTOMER.DISPUTE.RESOLVED", dispute("CANCELED_BY_BUYER"), DC, S.SUCCEEDED, None),
    ("CUSTOMER.DISPUTE.RESOLVED", dispute("RESOLVED_BUYER_FAVOUR"), DC, S.REFUNDED, None),
    ("CUSTOMER.DISPUTE.RESOLVED", dispute("ACCEPTED"), DC, S.REFUNDED, None),
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


def test_a_refund_names_its_capture_and_its_total_so_far():
    event = events.normalize(envelope("PAYMENT.CAPTURE.REFUNDED", refund("5.00")))
    assert event.refund == Refund(500) and event.refs[0] == CAPTURE  # the total so far
    reversed_ = events.normalize(envelope("PAYMENT.CAPTURE.REVERSED", refund("19.99")))
    assert reversed_.refund is None  # a reversal takes it all back


def test_a_subscription_payment_names_its_subscription_and_may_start_it():
    event = events.normalize(envelope("PAYMENT.SALE.COMPLETED", SALE))
    assert event.subscription_ref == SUB and event.refs[0] == SUB
    assert event.starts_subscription
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
