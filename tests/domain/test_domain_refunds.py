"""What is left to refund (edge.domain.refunds): every refund counted once, whatever order its
reports came in, and a node refund held until the provider reports it."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st

from edge.domain.convergence import Refund, Step, fold
from edge.domain.events import EventType as E
from edge.domain.refunds import (
    DONE,
    FAILED,
    REQUESTED,
    SENT,
    SUCCEEDED,
    UNKNOWN,
    NodeRefund,
    Reported,
    held,
    is_reported,
    kept,
    refundable,
    reported,
)
from edge.domain.status import Status as S

CHARGED = 1999


def refunded(n: int, at: int, amount: int, of: str | None = None) -> Step:
    return Step(f"evt_{n}", at, str(E.PAYMENT_REFUNDED), S.REFUNDED, refund=Refund(amount, of))


def failed(n: int, at: int, amount: int, of: str | None = None) -> Step:
    return Step(f"evt_{n}", at, str(E.PAYMENT_REFUND_FAILED), refund=Refund(amount, of))


def test_a_refund_made_in_the_dashboard_counts_before_the_node_asks():
    """The issue's case: 10.00 of 19.99 refunded in the provider's dashboard; the node then
    asks for 9.00 and refuses 9.99 (only 0.99 is left), where it used to accept both."""
    by = reported([refunded(1, 1_000, 1000, "re_dash")])
    assert refundable(CHARGED, by, []) == 999
    asked = [NodeRefund(900, REQUESTED)]
    assert refundable(CHARGED, by, asked) == 99
    # the provider reports the node's refund: it counts once, through its id
    by = reported([refunded(1, 1_000, 1000, "re_dash"), refunded(2, 2_000, 900, "re_node")])
    answered = [NodeRefund(900, SUCCEEDED, "re_node", 1_900)]
    assert (by.given_back, refundable(CHARGED, by, answered)) == (1900, 99)


def test_a_total_counts_every_refund_made_before_it():
    """Stripe's charge.refunded states ``amount_refunded`` only: a node refund made before that
    total was stated is in it; one made after is not yet, and stays held."""
    total = reported([refunded(1, 5_000, 1500)])
    before = NodeRefund(500, SENT, "re_1", 4_000)
    after = NodeRefund(300, SENT, "re_2", 6_000)
    assert is_reported(before, total) and not is_reported(after, total)
    assert held([before, after], total) == 300
    assert refundable(CHARGED, total, [before, after]) == CHARGED - 1500 - 300


def test_named_refunds_and_totals_of_the_same_money_count_once():
    steps = [refunded(1, 1_000, 500, "re_1"), refunded(2, 1_001, 500), refunded(3, 1_002, 500)]
    assert reported(steps).given_back == 500
    steps.append(refunded(4, 2_000, 300, "re_2"))
    assert reported(steps).given_back == 800
    steps.append(refunded(5, 2_001, 800))
    assert reported(steps).given_back == 800


@given(st.permutations(range(3)))
def test_what_a_dispute_took_is_added_to_a_total_that_counts_refunds_only(order):
    """Stripe's ``amount_refunded`` never counts a dispute: 5.00 refunded (known only by the
    total) and a lost dispute of 14.99 gave back all of 19.99, in whatever order they come;
    the fold reaches ``refunded`` with it."""
    lost = Step(
        "evt_3", 3_000, str(E.PAYMENT_DISPUTE_CLOSED), S.REFUNDED, refund=Refund(1499, "dp_1")
    )
    steps = [
        Step("evt_1", 1_000, str(E.PAYMENT_SUCCEEDED), S.SUCCEEDED),
        refunded(2, 2_000, 500),
        lost,
    ]
    given = [steps[i] for i in order]
    assert reported(given).given_back == CHARGED
    outcome = fold(
        [*given, Step("evt_0", 2_500, str(E.PAYMENT_DISPUTED), S.DISPUTED)], amount=CHARGED
    )
    assert outcome.status == S.REFUNDED
    # a refund named as well as totalled still counts once beside the dispute
    assert reported([*given, refunded(4, 2_000, 500, "re_1")]).given_back == CHARGED


def test_the_records_kept_are_every_held_one_and_the_latest_others():
    by = reported([refunded(1, 1_000, 300, "re_1")])
    records = [
        NodeRefund(300, SUCCEEDED, "re_1", 900),  # reported: counts through the provider's word
        NodeRefund(100, SENT),  # held
        NodeRefund(100, FAILED),
        NodeRefund(100, REQUESTED),  # held
        NodeRefund(100, DONE),
    ]
    assert kept(records, by, 3) == [1, 3, 4]
    assert kept(records, by, 1) == [1, 3]  # held ones are kept past the limit
    assert kept(records, by, 10) == [0, 1, 2, 3, 4]
    kept_held = [records[i] for i in kept(records, by, 1)]
    assert held(kept_held, by) == held(records, by) == 200


def test_a_refund_that_failed_no_longer_counts():
    named = [refunded(1, 1_000, 500, "re_1"), failed(2, 3_000, 500, "re_1")]
    assert reported(named).given_back == 0
    # only a total was stated: the failure after it is taken off it
    totals = [refunded(1, 1_000, 700), failed(2, 3_000, 200)]
    assert reported(totals).given_back == 500
    # a later total already leaves it out
    totals.append(refunded(3, 4_000, 500))
    assert reported(totals).given_back == 500


def test_a_refund_that_failed_in_part_counts_the_rest():
    """BTCPay: 4.00 offered, 1.00 paid out, the rest withdrawn: a failure of 3.00 of it."""
    steps = [refunded(1, 1_000, 400, "pp_1"), refunded(2, 1_000, 100, "pp_1")]
    assert reported([*steps, failed(3, 1_000, 300, "pp_1")]).given_back == 100
    assert reported([*steps, failed(3, 1_000, 400, "pp_1")]).given_back == 0


def test_what_is_held_by_state():
    """Refunds whose money may be on its way back hold their amount (an unknown outcome above
    all: its answer may have been lost); a refusal frees it; pay by mail counts in the story."""
    none = Reported()
    refunds = [NodeRefund(100, state) for state in (REQUESTED, SENT, SUCCEEDED, UNKNOWN)]
    assert held(refunds, none) == 400
    assert held([NodeRefund(100, FAILED), NodeRefund(100, DONE)], none) == 0


def test_never_below_nothing():
    by = reported([refunded(1, 1_000, 5000)])
    assert refundable(CHARGED, by, [NodeRefund(100, REQUESTED)]) == 0


steps_strategy = st.lists(
    st.tuples(
        st.sampled_from(["refund", "total", "failed"]),
        st.integers(0, 10),
        st.integers(1, 2000),
        st.sampled_from(["re_1", "re_2", "re_3"]),
    ),
    max_size=12,
)


@given(steps_strategy, st.randoms())
def test_the_same_reports_in_any_order_give_the_same_figures(drawn, rnd: random.Random):
    steps = []
    for n, (kind, at, amount, of) in enumerate(drawn):
        if kind == "refund":
            steps.append(refunded(n, at * 1000, amount, of))
        elif kind == "total":
            steps.append(refunded(n, at * 1000, amount))
        else:
            steps.append(failed(n, at * 1000, amount, of))
    shuffled = list(steps)
    rnd.shuffle(shuffled)
    assert reported(steps) == reported(shuffled)
    assert reported(steps).given_back >= 0


def test_a_chargeback_won_back_returns_its_money_to_the_merchant():
    """Paddle takes a chargeback's amount at once (counted as given back) and gives it back
    when it wins (``chargeback_reverse``, a dispute closed in the merchant's favour)."""
    taken = Step("evt_1", 1_000, str(E.PAYMENT_DISPUTED), S.DISPUTED, refund=Refund(400, "adj_1"))
    won = Step(
        "evt_2", 2_000, str(E.PAYMENT_DISPUTE_CLOSED), S.SUCCEEDED, refund=Refund(400, "adj_2")
    )
    assert reported([taken]).given_back == 400
    assert reported([taken, won]).given_back == reported([won, taken]).given_back == 0
    assert refundable(CHARGED, reported([taken, won]), []) == CHARGED


def test_a_named_refund_that_failed_comes_off_a_total_stated_meanwhile():
    """Stripe: refund.created (named) and charge.refunded (a total) for one refund, then
    refund.failed: the money is not given back, whichever report counted it."""
    steps = [
        refunded(1, 1_000, 500, "re_1"),
        refunded(2, 1_001, 500),
        failed(3, 5_000, 500, "re_1"),
    ]
    assert reported(steps).given_back == 0
    # a total stated after the failure no longer counts it already
    later = [*steps, refunded(4, 6_000, 0)]
    assert reported(later).given_back == 0
