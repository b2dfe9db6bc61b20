"""BTCPay invoice events in the node's terms (PROVIDERS.md "BTCPay", event mapping): every row of
the table, the delivery id that deduplicates, what is read from the metadata, an expiry part
paid flagged once, a refund offered and a payout paid out, and bodies that are not events."""

from __future__ import annotations

import json
from typing import Any

import pytest

from edge.domain import attention, changes
from edge.domain.events import EventType as E
from edge.domain.status import Status as S
from edge.providers.base import (
    REFUND_PENDING,
    REFUND_SUCCEEDED,
    FollowUp,
    MalformedPayload,
    ProviderRefund,
)
from edge.providers.btcpay import events
from edge.sim.btcpay import objects

TX = "tx_01JD0000000000000000000001"


def delivery(event_type: str, **fields: Any) -> dict[str, Any]:
    return objects.delivery(
        event_type,
        webhook_id="W1",
        delivery_id="D2",
        original_delivery_id="D1",
        is_redelivery=True,
        timestamp=1795254528,
        store_id="S1",
        invoice_id="INV1",
        metadata={"orderId": TX, "customerRef": "cust-9", "buyerEmail": "b@example.com"},
        **fields,
    )


def read(event: dict[str, Any]) -> Any:
    return events.normalize(objects.body(event))


@pytest.mark.parametrize(
    ("btcpay_type", "fields", "normalized", "target"),
    [
        ("InvoiceCreated", {}, E.CHECKOUT_CREATED, None),
        ("InvoiceReceivedPayment", {"afterExpiration": False}, E.PAYMENT_PROCESSING, None),
        ("InvoiceProcessing", {"overPaid": False}, E.PAYMENT_PROCESSING, S.PROCESSING),
        ("InvoicePaymentSettled", {"afterExpiration": False}, E.PAYMENT_PROCESSING, None),
        ("InvoiceSettled", {"manuallyMarked": False}, E.PAYMENT_SUCCEEDED, S.SUCCEEDED),
        # marked by hand: BTCPay allows it from New, Processing, Expired or Invalid
        # (InvoiceEntity.CanMarkComplete, btcpayserver@03345c28 InvoiceEntity.cs:804-822): a
        # success and a failure like any other, which the story decides (late, or ignored)
        ("InvoiceSettled", {"manuallyMarked": True}, E.PAYMENT_SUCCEEDED, S.SUCCEEDED),
        ("InvoiceInvalid", {"manuallyMarked": True}, E.PAYMENT_FAILED, S.FAILED),
        ("InvoiceExpired", {"partiallyPaid": False}, E.CHECKOUT_EXPIRED, S.EXPIRED),
        ("InvoiceInvalid", {"manuallyMarked": False}, E.PAYMENT_FAILED, S.FAILED),
        ("InvoicePaidAfterExpiration", {}, E.PAYMENT_PAID_LATE, S.EXPIRED),
        # part paid at the expiry: the checkout expired, flagged (below)
        ("InvoiceExpired", {"partiallyPaid": True}, E.CHECKOUT_EXPIRED, S.EXPIRED),
        ("InvoiceExpiredPaidPartial", {}, E.CHECKOUT_EXPIRED, S.EXPIRED),
        ("InvoiceRefund", {"pullPaymentId": "PP1"}, E.UNMATCHED, None),
        ("InvoiceSomethingNew", {}, E.UNMATCHED, None),
    ],
)
def test_every_row_of_the_table(btcpay_type, fields, normalized, target):
    event = read(delivery(btcpay_type, **fields))
    assert (event.type, event.payment_status) == (normalized, target)
    assert event.provider_type == btcpay_type
    assert event.tx_id == TX and event.refs == ("INV1",)
    assert event.occurred_at_ms == 1795254528000
    assert event.customer_ref == "cust-9"
    # the rest of the snapshot may name the buyer: not read
    assert event.metadata == {}


def test_every_retry_and_redelivery_shares_the_first_delivery_id():
    first = delivery("InvoiceSettled")
    first.update(deliveryId="D1", originalDeliveryId="D1", isRedelivery=False)
    retry = delivery("InvoiceSettled")
    assert read(first).dedup_ids == read(retry).dedup_ids == ("D1",)
    assert read(first).provider_event_id == "D1"


def test_old_servers_spelling_is_read():
    legacy = delivery("InvoiceSettled")
    legacy["orignalDeliveryId"] = legacy.pop("originalDeliveryId")
    assert read(legacy).dedup_ids == ("D1",)
    bare = delivery("InvoiceSettled")
    del bare["originalDeliveryId"]
    assert read(bare).dedup_ids == ("D2",)


def payout(state: str, **fields: Any) -> dict[str, Any]:
    """A ``WebhookPayoutEvent`` (BTCPayServer.Client/Models/WebhookInvoiceEvent.cs:8-21)."""
    return objects.payout_delivery(
        "PayoutUpdated",
        webhook_id="W1",
        delivery_id="D9",
        timestamp=1795254528,
        store_id="S1",
        payout_id="P1",
        pull_payment_id="PP1",
        payout_state=state,
        **fields,
    )


def test_an_expiry_part_paid_flags_the_transaction_once_whichever_event_tells_it():
    expired = read(delivery("InvoiceExpired", partiallyPaid=True))
    also = read(delivery("InvoiceExpiredPaidPartial"))
    plain = read(delivery("InvoiceExpired", partiallyPaid=False))
    assert expired.attention == also.attention == attention.PAID_LATE
    assert plain.attention is None
    # one change, "the checkout expired", named by the invoice: the second is history
    assert expired.change == also.change == plain.change == "INV1"
    assert changes.change_key(expired.type, named=expired.change) == changes.change_key(
        also.type, named=also.change
    )
    # no amount: the invoice's is not what was paid
    assert not expired.states_amount and not also.states_amount


def test_a_refund_offered_names_its_pull_payment_and_asks_for_it_to_be_read():
    event = read(delivery("InvoiceRefund", pullPaymentId="PP1"))
    assert (event.type, event.payment_status, event.refund) == (E.UNMATCHED, None, None)
    assert event.refs == ("INV1",) and event.link_refs == ("PP1",)
    assert event.provider_refund == ProviderRefund(
        "PP1", None, REFUND_PENDING, detail="a refund offered to the buyer"
    )
    assert event.follow_ups == (FollowUp(events.READ_REFUND, {"pullPaymentId": "PP1"}),)


def test_a_refund_event_without_its_pull_payment_is_history():
    event = read(delivery("InvoiceRefund"))
    assert event.type == E.UNMATCHED
    assert (event.provider_refund, event.follow_ups, event.link_refs) == (None, (), ())


def test_a_completed_payout_is_the_refunds_money_moved():
    event = read(payout("Completed"))
    assert (event.type, event.payment_status, event.tx_id) == (E.UNMATCHED, None, None)
    # matched by the pull payment, which the refund's events linked to the transaction
    assert event.refs == ("PP1",) and event.dedup_ids == ("D9",)
    assert event.provider_refund is not None
    assert (event.provider_refund.id, event.provider_refund.state) == ("PP1", REFUND_SUCCEEDED)
    assert event.occurred_at_ms == 1795254528000


@pytest.mark.parametrize(
    "state", ["AwaitingApproval", "AwaitingPayment", "InProgress", "Cancelled"]
)
def test_other_payout_states_are_history(state):
    event = read(payout(state))
    assert (event.type, event.refs, event.provider_refund) == (E.UNMATCHED, ("PP1",), None)


def test_events_of_other_objects_are_history():
    request = {
        "deliveryId": "D9",
        "webhookId": "W1",
        "originalDeliveryId": "D9",
        "isRedelivery": False,
        "type": "PaymentRequestCreated",
        "timestamp": 1795254528,
        "storeId": "S1",
        "paymentRequestId": "PR1",
    }
    event = events.normalize(json.dumps(request).encode())
    assert (event.type, event.payment_status, event.tx_id, event.refs) == (
        E.UNMATCHED,
        None,
        None,
        (),
    )


def test_an_order_id_that_is_not_a_transaction_id_is_matched_by_the_invoice_only():
    event = delivery("InvoiceSettled")
    event["metadata"] = {"orderId": "WOO-1234"}
    read_back = read(event)
    assert read_back.tx_id is None and read_back.refs == ("INV1",)


@pytest.mark.parametrize("timestamp", [None, "1795254528", True, -5, 0])
def test_a_timestamp_that_is_not_unix_seconds_is_left_out(timestamp):
    event = delivery("InvoiceSettled")
    event["timestamp"] = timestamp
    assert read(event).occurred_at_ms is None


@pytest.mark.parametrize(
    "body",
    [b"not json", b"[]", b'"x"', b"{}", b'{"type": "InvoiceSettled"}', b'{"deliveryId": "D1"}'],
)
def test_bodies_that_are_not_deliveries(body):
    with pytest.raises(MalformedPayload):
        events.normalize(body)
