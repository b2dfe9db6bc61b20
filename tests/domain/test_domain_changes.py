"""One change, one event (edge.domain.changes): the key that names the change an event
reports."""

from __future__ import annotations

import pytest

from edge.domain.changes import ONCE, change_key
from edge.domain.events import EventType as E


@pytest.mark.parametrize("once", sorted(ONCE))
def test_what_happens_once_is_keyed_by_its_type(once):
    assert change_key(once) == change_key(once, amount=5, currency="EUR") == str(once)


def test_an_event_of_a_once_type_that_moves_nothing_is_not_the_move():
    """BTCPay's payment received (processing, no move) before InvoiceProcessing (the move to
    processing): both told, in either order, and each only once."""
    still = change_key(E.PAYMENT_PROCESSING, moves=False)
    assert still != change_key(E.PAYMENT_PROCESSING) == "payment.processing"
    assert still == change_key(E.PAYMENT_PROCESSING, amount=5, moves=False)
    # a provider's own creation moves nothing either, and is the node's checkout.created again
    assert change_key(E.CHECKOUT_CREATED, moves=False) == "checkout.created"


def test_a_refund_by_its_provider_id_whatever_word_it_earned():
    assert change_key(E.PAYMENT_REFUNDED, refund_of="re_1") == "refund:re_1"
    assert change_key(E.PAYMENT_PARTIALLY_REFUNDED, refund_of="re_1") == "refund:re_1"
    assert change_key(E.PAYMENT_REFUNDED, amount=500) == "refund-total:500"
    # an adapter's name never splits one refund in two
    assert change_key(E.PAYMENT_REFUNDED, refund_of="re_1", named="x") == "refund:re_1"


def test_disputes_by_the_adapters_name_else_by_amount():
    assert change_key(E.PAYMENT_DISPUTED, named="dp_1") == "payment.disputed:dp_1"
    assert change_key(E.PAYMENT_DISPUTED, amount=500, currency="EUR") == (
        "payment.disputed:500:EUR"
    )
    assert change_key(E.PAYMENT_DISPUTE_WARNING, named="issfr_1") != change_key(
        E.PAYMENT_DISPUTED, named="issfr_1"
    )


def test_a_subscription_status_by_the_version_it_made():
    first = change_key(E.SUBSCRIPTION_PAST_DUE, sub_status="past_due", sub_version=2)
    again = change_key(E.SUBSCRIPTION_UPDATED, sub_status="past_due", sub_version=2)
    later = change_key(E.SUBSCRIPTION_PAST_DUE, sub_status="past_due", sub_version=4)
    assert first == again != later


@pytest.mark.parametrize(
    "type_",
    [E.PAYMENT_ATTEMPT_FAILED, E.SUBSCRIPTION_PAYMENT_SUCCEEDED, E.UNMATCHED],
)
def test_what_has_no_name_is_a_change_of_its_own(type_):
    assert change_key(type_, amount=900, currency="EUR") is None


def test_a_renewal_named_by_the_adapter():
    assert change_key(E.SUBSCRIPTION_PAYMENT_SUCCEEDED, named="in_1") == (
        "subscription.payment_succeeded:in_1"
    )
    assert change_key(E.UNMATCHED, named="in_1") is None
