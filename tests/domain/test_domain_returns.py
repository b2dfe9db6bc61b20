"""Where a returning buyer goes on to (edge.domain.returns): the success address only for a
payment that went through or is on its way; every failure said as what it is."""

import pytest

from edge.domain.returns import Outcome, outcome, said


@pytest.mark.parametrize(
    ("status", "latest", "canceled", "expected"),
    [
        ("succeeded", "payment.succeeded", False, Outcome.PAID),
        ("partially_refunded", None, False, Outcome.PAID),
        ("processing", "payment.processing", False, Outcome.PROCESSING),
        ("pending", "checkout.created", False, Outcome.PENDING),
        ("pending", "payment.processing", False, Outcome.PENDING),
        ("pending", "payment.attempt_failed", False, Outcome.DECLINED),
        ("failed", "payment.failed", False, Outcome.DECLINED),
        ("canceled", "checkout.canceled", False, Outcome.CANCELED),
        ("expired", "checkout.expired", False, Outcome.EXPIRED),
        ("pending", "checkout.created", True, Outcome.CANCELED),
        ("succeeded", "payment.succeeded", True, Outcome.PAID),  # paid before the cancel
        ("expired", None, True, Outcome.EXPIRED),
    ],
)
def test_the_outcome_of_a_return(status, latest, canceled, expected):
    assert outcome(status, latest, canceled_by_buyer=canceled) is expected


def test_only_a_payment_under_way_goes_to_the_success_address():
    assert {o for o in Outcome if o.succeeded} == {
        Outcome.PAID,
        Outcome.PROCESSING,
        Outcome.PENDING,
    }


def test_each_outcome_is_said_by_its_own_words_and_a_pending_one_as_processing():
    assert said(Outcome.DECLINED) == ("return.declined.heading", "return.declined.text")
    assert said(Outcome.PENDING) == said(Outcome.PROCESSING)
    others = [said(o) for o in Outcome if o is not Outcome.PENDING]
    assert len(set(others)) == len(others)
