"""Convergence (CONTRACT 2): every order and duplication of a story's events ends where in-order
delivery ends, and the record never moves backwards on the way."""

from __future__ import annotations

import dataclasses
import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from edge.domain.convergence import Fate, Outcome, Refund, Start, Step, behind, fold
from edge.domain.events import EventType as E
from edge.domain.status import Kind, reachable
from edge.domain.status import Status as S


def advance(
    standing: Start,
    start: Start,
    story: list[Step],
    new: list[Step],
    subscription_checkout: bool = False,
    amount: int | None = None,
) -> Outcome | None:
    """What the actor adopts for a record at ``standing`` (``edge.actors.project.story``): the
    fold with the ``new`` steps, unless that would move the record or its subscription
    backwards."""
    outcome = fold([*story, *new], start, subscription_checkout, amount)
    return None if behind(standing, outcome) else outcome


T0 = 1_700_000_000_000


def step(
    n: int,
    at_s: int,
    type_: E,
    pay: S | None = None,
    sub: S | None = None,
    starts=False,
    refund: Refund | None = None,
):
    return Step(f"evt_{n:03d}", T0 + at_s * 1000, str(type_), pay, sub, starts, refund)


AMOUNT = 1000  # every story's transaction, in minor units
PARTIAL = (E.PAYMENT_PARTIALLY_REFUNDED, S.PARTIALLY_REFUNDED)


# Real stories, in the order they happened; several events share a second, as providers stamp.
STORIES: dict[str, tuple[list[Step], bool]] = {
    "paid": ([step(1, 0, E.PAYMENT_SUCCEEDED, S.SUCCEEDED)], False),
    "async paid": (
        [
            step(1, 0, E.PAYMENT_PROCESSING, S.PROCESSING),
            step(2, 0, E.PAYMENT_SUCCEEDED, S.SUCCEEDED),
        ],
        False,
    ),
    "async failed": (
        [step(1, 0, E.PAYMENT_PROCESSING, S.PROCESSING), step(2, 90, E.PAYMENT_FAILED, S.FAILED)],
        False,
    ),
    "expired": ([step(1, 0, E.CHECKOUT_EXPIRED, S.EXPIRED)], False),
    "refunded in parts": (
        [
            step(1, 0, E.PAYMENT_SUCCEEDED, S.SUCCEEDED),
            step(2, 10, E.PAYMENT_PARTIALLY_REFUNDED, S.PARTIALLY_REFUNDED),
            step(3, 20, E.PAYMENT_PARTIALLY_REFUNDED, S.PARTIALLY_REFUNDED),
            step(4, 30, E.PAYMENT_REFUNDED, S.REFUNDED),
        ],
        False,
    ),
    # Paddle: approved refund adjustments, each its own amount, whatever their type says (a
    # whole refund made by items is ``partial``; Paddle's own SDK fixtures have ``type: null``)
    "refunded by adjustments that add up": (
        [
            step(1, 0, E.PAYMENT_SUCCEEDED, S.SUCCEEDED),
            step(2, 10, *PARTIAL, refund=Refund(300, "adj_1")),
            step(3, 20, *PARTIAL, refund=Refund(700, "adj_2")),
        ],
        False,
    ),
    "one refund, reported twice (created approved, then updated)": (
        [
            step(1, 0, E.PAYMENT_SUCCEEDED, S.SUCCEEDED),
            step(2, 10, *PARTIAL, refund=Refund(600, "adj_1")),
            step(3, 15, *PARTIAL, refund=Refund(600, "adj_1")),
        ],
        False,
    ),
    # Stripe and PayPal: the total refunded so far, which only grows
    "refunded totals": (
        [
            step(1, 0, E.PAYMENT_SUCCEEDED, S.SUCCEEDED),
            step(2, 10, *PARTIAL, refund=Refund(300)),
            step(3, 10, *PARTIAL, refund=Refund(600)),
            step(4, 30, *PARTIAL, refund=Refund(1000)),
        ],
        False,
    ),
    "refunded in the same second": (
        [step(1, 0, E.PAYMENT_SUCCEEDED, S.SUCCEEDED), step(2, 0, E.PAYMENT_REFUNDED, S.REFUNDED)],
        False,
    ),
    "dispute won": (
        [
            step(1, 0, E.PAYMENT_SUCCEEDED, S.SUCCEEDED),
            step(2, 10, E.PAYMENT_DISPUTED, S.DISPUTED),
            step(3, 20, E.PAYMENT_DISPUTE_CLOSED, S.SUCCEEDED),
        ],
        False,
    ),
    "dispute lost": (
        [
            step(1, 0, E.PAYMENT_SUCCEEDED, S.SUCCEEDED),
            step(2, 10, E.PAYMENT_DISPUTED, S.DISPUTED),
            step(3, 20, E.PAYMENT_DISPUTE_CLOSED, S.REFUNDED),
        ],
        False,
    ),
    "part refunded, then disputed and won": (
        [
            step(1, 0, E.PAYMENT_SUCCEEDED, S.SUCCEEDED),
            step(2, 5, E.PAYMENT_PARTIALLY_REFUNDED, S.PARTIALLY_REFUNDED),
            step(3, 10, E.PAYMENT_DISPUTED, S.DISPUTED),
            step(4, 20, E.PAYMENT_DISPUTE_CLOSED, S.SUCCEEDED),
        ],
        False,
    ),
    "subscription": (
        [
            step(1, 0, E.SUBSCRIPTION_CREATED, sub=S.ACTIVE),
            step(2, 0, E.PAYMENT_SUCCEEDED, S.SUCCEEDED, starts=True),
            step(3, 0, E.SUBSCRIPTION_PAYMENT_SUCCEEDED, S.SUCCEEDED, S.ACTIVE, starts=True),
            step(4, 100, E.SUBSCRIPTION_PAYMENT_FAILED, sub=S.PAST_DUE),
            step(5, 200, E.SUBSCRIPTION_PAYMENT_SUCCEEDED, sub=S.ACTIVE),
            step(6, 300, E.SUBSCRIPTION_UPDATED, sub=S.PAUSED),
            step(7, 400, E.SUBSCRIPTION_UPDATED, sub=S.ACTIVE),
            step(8, 500, E.SUBSCRIPTION_CANCELED, sub=S.CANCELED),
        ],
        True,
    ),
}

# where each story ends, written out by hand: (status, version, subscription status, its version)
ENDS = {
    "paid": (S.SUCCEEDED, 2, None, 0),
    "async paid": (S.SUCCEEDED, 3, None, 0),
    "async failed": (S.FAILED, 3, None, 0),
    "expired": (S.EXPIRED, 2, None, 0),
    "refunded in parts": (S.REFUNDED, 4, None, 0),
    "refunded in the same second": (S.REFUNDED, 3, None, 0),
    "refunded by adjustments that add up": (S.REFUNDED, 4, None, 0),
    "one refund, reported twice (created approved, then updated)": (
        S.PARTIALLY_REFUNDED,
        3,
        None,
        0,
    ),
    "refunded totals": (S.REFUNDED, 4, None, 0),
    "dispute won": (S.SUCCEEDED, 4, None, 0),
    "dispute lost": (S.REFUNDED, 4, None, 0),
    "part refunded, then disputed and won": (S.SUCCEEDED, 5, None, 0),
    "subscription": (S.SUCCEEDED, 2, S.CANCELED, 6),
}


def fold_story(steps, subscription=False):
    return fold(steps, subscription_checkout=subscription, amount=AMOUNT)


def ends(outcome):
    return (outcome.status, outcome.version, outcome.sub_status, outcome.sub_version)


@pytest.mark.parametrize("name", STORIES)
def test_in_order_delivery_ends_where_the_story_does(name):
    steps, subscription = STORIES[name]
    assert ends(fold_story(steps, subscription)) == ENDS[name]


def online(deliveries, subscription):
    """Deliver one step at a time as the actor does; every standing on the way."""
    start = Start()
    standing, story, seen = start, [], []
    for step_ in deliveries:
        outcome = advance(standing, start, story, [step_], subscription, AMOUNT)
        if outcome is not None:
            story.append(step_)
            standing = Start(
                outcome.status, outcome.version, outcome.sub_status, outcome.sub_version
            )
        seen.append(standing)
    return seen


def duplicate(step_: Step, n: int) -> Step:
    """A provider's redelivery under a new id: the same effect."""
    return dataclasses.replace(step_, event_id=f"{step_.event_id}_dup{n}")


@st.composite
def deliveries(draw, name):
    steps, _ = STORIES[name]
    extra = draw(st.lists(st.sampled_from(steps), max_size=4))
    shuffled = draw(st.permutations([*steps, *(duplicate(s, i) for i, s in enumerate(extra))]))
    return shuffled


@pytest.mark.parametrize("name", STORIES)
@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_every_order_and_duplication_converges_and_never_goes_back(name, data):
    _, subscription = STORIES[name]
    order = data.draw(deliveries(name))
    seen = online(order, subscription)
    assert (seen[-1].status, seen[-1].version, seen[-1].sub_status, seen[-1].sub_version) == ENDS[
        name
    ]
    for before, after in itertools.pairwise([Start(), *seen]):
        assert after.version >= before.version
        assert after.status == before.status or after.status in reachable(
            Kind.PAYMENT, before.status
        )
        assert after.sub_version >= before.sub_version


@pytest.mark.parametrize("name", ["paid", "dispute won", "refunded in parts"])
def test_exhaustively_every_permutation(name):
    steps, subscription = STORIES[name]
    for order in itertools.permutations(steps):
        seen = online(order, subscription)
        assert (seen[-1].status, seen[-1].version) == ENDS[name][:2], order


def test_a_refund_before_the_success_is_held_then_applied():
    refund = step(2, 30, E.PAYMENT_REFUNDED, S.REFUNDED)
    held = fold([refund])
    assert (held.status, held.fates) == (S.PENDING, {"evt_002": Fate.HELD})
    paid = fold([refund, step(1, 0, E.PAYMENT_SUCCEEDED, S.SUCCEEDED)])
    assert paid.status == S.REFUNDED and paid.fates["evt_002"] is Fate.APPLIED
    assert paid.version == 3  # pending -> succeeded -> refunded


def named(step_: Step, change: str) -> Step:
    return dataclasses.replace(step_, change=change)


@settings(max_examples=200, deadline=None)
@given(
    told_again_s=st.integers(min_value=-5, max_value=60),
    order=st.permutations(range(4)),
    won=st.booleans(),
)
def test_a_named_change_told_twice_at_other_times_is_one_step(told_again_s, order, won):
    """A dispute's opening told by its webhook (stamped when Stripe made the event) and by
    asking (stamped when the dispute opened), at other times, even one after the dispute's
    closing: one step, at the earlier time, so the story ends where it did with one telling,
    whatever order they come in."""
    opening = named(step(2, 10, E.PAYMENT_DISPUTED, S.DISPUTED), "dp_1")
    closing = named(
        step(3, 20, E.PAYMENT_DISPUTE_CLOSED, S.SUCCEEDED if won else S.REFUNDED), "dp_1"
    )
    again = dataclasses.replace(opening, event_id="evt_sync", at=opening.at + told_again_s * 1000)
    steps = [step(1, 0, E.PAYMENT_SUCCEEDED, S.SUCCEEDED), opening, closing, again]
    seen = online([steps[i] for i in order], False)
    once = fold_story(steps[:3])
    assert (seen[-1].status, seen[-1].version) == (once.status, once.version)
    assert (once.status, once.version) == ((S.SUCCEEDED, 4) if won else (S.REFUNDED, 4))
    assert (
        fold_story(steps).fates["evt_sync"]
        == fold_story(steps).fates["evt_002" if told_again_s >= 0 else "evt_sync"]
    )


def test_a_dispute_closing_waits_for_its_opening():
    won = step(3, 20, E.PAYMENT_DISPUTE_CLOSED, S.SUCCEEDED)
    outcome = fold([step(1, 0, E.PAYMENT_SUCCEEDED, S.SUCCEEDED), won])
    assert outcome.status == S.SUCCEEDED and outcome.fates["evt_003"] is Fate.HELD


def test_a_late_success_never_ends_a_dispute():
    outcome = fold(
        [
            step(1, 0, E.PAYMENT_SUCCEEDED, S.SUCCEEDED),
            step(2, 10, E.PAYMENT_DISPUTED, S.DISPUTED),
            step(3, 20, E.PAYMENT_SUCCEEDED, S.SUCCEEDED),
        ]
    )
    assert outcome.status == S.DISPUTED and outcome.fates["evt_003"] is Fate.HELD


def test_a_failure_after_success_changes_nothing():
    paid = Start(S.SUCCEEDED, 2)
    story = [step(1, 10, E.PAYMENT_SUCCEEDED, S.SUCCEEDED)]
    failure = step(2, 0, E.PAYMENT_FAILED, S.FAILED)  # stamped earlier, delivered later
    assert advance(paid, Start(), story, [failure]) is None
    later = step(3, 20, E.PAYMENT_FAILED, S.FAILED)
    outcome = advance(paid, Start(), story, [later])
    assert outcome is not None and outcome.status == S.SUCCEEDED
    assert outcome.fates["evt_003"] is Fate.IGNORED


@pytest.mark.parametrize(
    ("ended", "own"), [(S.CANCELED, True), (S.EXPIRED, False), (S.FAILED, False)]
)
def test_money_for_an_ended_checkout_is_late(ended, own):
    """The provider's expiry or failure, or the node's own cancel (the merchant's, a failed
    checkout call): terminal stays terminal, and the money is late."""
    end = dataclasses.replace(step(1, 0, E.CHECKOUT_CANCELED, ended), own=own)
    paid = step(2, 10, E.PAYMENT_SUCCEEDED, S.SUCCEEDED)
    outcome = fold([end, paid])
    assert outcome.status == ended and outcome.late == {"evt_002"}
    assert outcome.fates["evt_002"] is Fate.IGNORED
    assert not outcome.voided


@pytest.mark.parametrize("paid_after_s", [10, -10])
def test_a_cancel_the_provider_reports_yields_to_its_payment(paid_after_s):
    """Paddle's transaction.canceled and transaction.paid for one transaction: a provider that
    took the money cannot have canceled the checkout, so the payment wins in every delivery
    order and whatever the times say; the merchant is told (contradicted)."""
    end = step(1, 0, E.CHECKOUT_CANCELED, S.CANCELED)
    paid = step(2, paid_after_s, E.PAYMENT_SUCCEEDED, S.SUCCEEDED)
    for order in ([end, paid], [paid, end]):
        outcome = fold(order)
        assert (outcome.status, outcome.late, outcome.voided) == (S.SUCCEEDED, set(), True)
        assert outcome.fates == {"evt_001": Fate.IGNORED, "evt_002": Fate.APPLIED}
        assert outcome.contradicted
    # delivered one at a time: a record that took the cancel first moves on to the payment
    canceled = fold([end])
    standing = Start(canceled.status, canceled.version)
    moved = advance(standing, Start(), [end], [paid])
    assert moved is not None and moved.status == S.SUCCEEDED
    # the node's own cancel does not yield: the record stays canceled (the payment is late,
    # or, stamped before the cancel, would move it backwards: it changes nothing)
    own = dataclasses.replace(end, own=True)
    kept = advance(Start(S.CANCELED, 2), Start(), [own], [paid])
    assert kept is None or kept.status == S.CANCELED


@pytest.mark.parametrize("paid_at", [-10, 5, 30])
def test_the_nodes_own_cancel_holds_when_the_provider_reports_it_and_then_money(paid_at):
    """The merchant canceled (the node's own act), Paddle reported the cancel it was asked
    for, and then money came, stamped before or after: the record stays canceled, whatever a
    refund of that money says (found by the state machine: a Paddle cancel report voided the
    node's own cancel)."""
    own = dataclasses.replace(step(1, 0, E.CHECKOUT_CANCELED, S.CANCELED), own=True)
    reported = step(2, 20, E.CHECKOUT_CANCELED, S.CANCELED)
    paid = step(3, paid_at, E.PAYMENT_SUCCEEDED, S.SUCCEEDED)
    refund = dataclasses.replace(
        step(4, 40, E.PAYMENT_REFUNDED, S.REFUNDED), refund=Refund(500, "re_1")
    )
    standing = Start(S.CANCELED, 2)
    for arrived in itertools.permutations([reported, paid, refund]):
        story: list[Step] = [own]
        for one in arrived:
            moved = advance(standing, Start(), story, [one])
            story.append(one)
            if moved is not None:
                assert moved.status == S.CANCELED, (arrived, moved)
                assert not moved.voided


def test_a_refund_is_not_late_money():
    outcome = fold(
        [step(1, 0, E.CHECKOUT_EXPIRED, S.EXPIRED), step(2, 9, E.PAYMENT_REFUNDED, S.REFUNDED)]
    )
    assert outcome.late == frozenset()


def test_subscription_events_before_its_start_are_held():
    renewal = step(5, 200, E.SUBSCRIPTION_PAYMENT_FAILED, sub=S.PAST_DUE)
    alone = fold([renewal], subscription_checkout=True)
    assert alone.sub_status is None and alone.fates["evt_005"] is Fate.HELD
    started = fold(
        [renewal, step(2, 0, E.PAYMENT_SUCCEEDED, S.SUCCEEDED, starts=True)],
        subscription_checkout=True,
    )
    assert (started.sub_status, started.sub_version, started.started_by) == (
        S.PAST_DUE,
        2,
        "evt_002",
    )


def test_each_subscription_step_says_the_version_it_applied_at():
    """Where in the subscription's life a status change happened, whatever came after it
    (the key its telling is one change by: a late past_due is not the active that followed)."""
    outcome = fold(
        [
            step(4, 300, E.SUBSCRIPTION_UPDATED, sub=S.ACTIVE),
            step(1, 0, E.PAYMENT_SUCCEEDED, S.SUCCEEDED, starts=True),
            step(3, 200, E.SUBSCRIPTION_PAST_DUE, sub=S.PAST_DUE),
            step(2, 100, E.SUBSCRIPTION_UPDATED, sub=S.ACTIVE),  # active already: no move
        ],
        subscription_checkout=True,
    )
    assert (outcome.sub_status, outcome.sub_version) == (S.ACTIVE, 3)
    assert outcome.sub_versions == {"evt_001": 1, "evt_002": 1, "evt_003": 2, "evt_004": 3}
    # and the step that moved it to the status it left it at: a step that changed nothing
    # shares the run of the one before it
    assert outcome.sub_runs == {
        "evt_001": "evt_001", "evt_002": "evt_001", "evt_003": "evt_003", "evt_004": "evt_004"
    }  # fmt: skip


def test_a_late_step_moves_the_versions_after_it_and_leaves_each_run_its_tellings():
    """A past_due dated before a renewal's active and a cancel: the cancel's version moves on,
    its run stays the cancel's (CONTRACT 4.3a: one change is told once, whatever came late)."""
    given = [
        step(1, 0, E.PAYMENT_SUCCEEDED, S.SUCCEEDED, starts=True),
        step(3, 200, E.SUBSCRIPTION_UPDATED, sub=S.ACTIVE),
        step(4, 300, E.SUBSCRIPTION_CANCELED, sub=S.CANCELED),
    ]
    before = fold(given, subscription_checkout=True)
    late = step(2, 100, E.SUBSCRIPTION_PAST_DUE, sub=S.PAST_DUE)
    after = fold([*given, late], subscription_checkout=True)
    assert (before.sub_versions["evt_004"], after.sub_versions["evt_004"]) == (1 + 1, 1 + 3)
    assert before.sub_runs["evt_004"] == after.sub_runs["evt_004"] == "evt_004"
    assert (before.sub_runs["evt_003"], after.sub_runs["evt_003"]) == ("evt_001", "evt_003")


def test_a_trial_ending_and_its_first_renewal_failing_in_one_second_end_past_due():
    """Stripe charges the first invoice as the trial ends and stamps in whole seconds: the
    move to active and the failed payment's past due share a second, and the lifecycle rank
    puts active first, in every order. (Ordering one second's moves by the status each update
    says it left, Stripe's previous_attributes, was tried and withdrawn: ranking a step after
    the status it left put this active level with the past due and ended it active, and a
    second telling of one change without it split the outcome by delivery order.)"""
    story = [
        step(1, 0, E.SUBSCRIPTION_CREATED, sub=S.TRIALING),
        step(2, 0, E.PAYMENT_SUCCEEDED, S.SUCCEEDED, starts=True),
        step(3, 100, E.SUBSCRIPTION_UPDATED, sub=S.ACTIVE),
        step(4, 100, E.SUBSCRIPTION_PAYMENT_FAILED, sub=S.PAST_DUE),
        step(5, 100, E.SUBSCRIPTION_PAST_DUE, sub=S.PAST_DUE),
    ]
    assert fold(story, subscription_checkout=True).sub_status == S.PAST_DUE
    for order in itertools.permutations(story):  # delivered one by one, as the actor takes them
        assert online(order, subscription=True)[-1].sub_status == S.PAST_DUE, order


def test_subscription_steps_on_a_payment_are_ignored():
    outcome = fold([step(1, 0, E.SUBSCRIPTION_UPDATED, sub=S.ACTIVE)], subscription_checkout=False)
    assert outcome.fates["evt_001"] is Fate.IGNORED and outcome.sub_status is None


def test_a_story_started_elsewhere_folds_from_there():
    outcome = fold([step(1, 0, E.PAYMENT_REFUNDED, S.REFUNDED)], Start(S.SUCCEEDED, 4))
    assert (outcome.status, outcome.version) == (S.REFUNDED, 5)


refunds = st.lists(
    st.tuples(st.integers(1, 1500), st.integers(0, 500)),  # (amount, seconds after the payment)
    min_size=1,
    max_size=6,
)


@settings(max_examples=300, deadline=None)
@given(refunds, st.booleans(), st.data())
def test_refunds_summing_to_the_amount_end_refunded_in_any_order(given_back, totals, data):
    """CONTRACT 4.3: refunds are summed by amount, whatever the provider calls them, and in
    whatever order they come: ``refunded`` once they reach the amount, else partly."""
    paid = step(0, 0, E.PAYMENT_SUCCEEDED, S.SUCCEEDED)
    steps, so_far = [paid], 0
    for n, (amount, at) in enumerate(sorted(given_back, key=lambda r: r[1]), start=1):
        so_far += amount
        # a total so far (Stripe, PayPal) or one refund of its own (Paddle), said partial
        refund = Refund(so_far) if totals else Refund(amount, f"adj_{n}")
        steps.append(step(n, at + 1, *PARTIAL, refund=refund))
    order = data.draw(st.permutations(steps))
    end = online(order, False)[-1]
    assert end.status == (S.REFUNDED if so_far >= AMOUNT else S.PARTIALLY_REFUNDED)
    assert end.status == fold_story(steps).status


def test_a_refund_with_no_amount_takes_the_providers_word():
    paid = step(1, 0, E.PAYMENT_SUCCEEDED, S.SUCCEEDED)
    assert fold_story([paid, step(2, 5, E.PAYMENT_REFUNDED, S.REFUNDED)]).status == S.REFUNDED
    assert fold_story([paid, step(2, 5, *PARTIAL)]).status == S.PARTIALLY_REFUNDED


def test_refunds_count_against_what_was_charged_when_tax_was_added_on_top():
    """Paddle adds tax to a tax-exclusive price: the buyer paid 1,190 for a 1,000 checkout, so
    1,000 given back is not all of it."""
    paid = dataclasses.replace(step(1, 0, E.PAYMENT_SUCCEEDED, S.SUCCEEDED), charged=1190)
    part = step(2, 5, *PARTIAL, refund=Refund(1000, "adj_1"))
    assert fold_story([paid, part]).status == S.PARTIALLY_REFUNDED
    rest = step(3, 9, *PARTIAL, refund=Refund(190, "adj_2"))
    assert fold_story([rest, part, paid]).status == S.REFUNDED


def test_a_held_refund_counts_once_it_applies():
    part = step(2, 5, *PARTIAL, refund=Refund(400, "adj_1"))
    rest = step(3, 9, *PARTIAL, refund=Refund(600, "adj_2"))
    held = fold_story([part, rest])
    assert held.status == S.PENDING and set(held.fates.values()) == {Fate.HELD}
    paid = fold_story([part, rest, step(1, 0, E.PAYMENT_SUCCEEDED, S.SUCCEEDED)])
    assert (paid.status, paid.version) == (S.REFUNDED, 4)
    assert paid.targets == {"evt_002": S.PARTIALLY_REFUNDED, "evt_003": S.REFUNDED}


@pytest.mark.parametrize("ended", [S.CANCELED, S.EXPIRED, S.FAILED])
@pytest.mark.parametrize("paid_first", [True, False])
def test_a_success_and_an_ending_contradict_in_either_order(ended, paid_first):
    """No delivery order can honour both (terminal stays terminal, a success is never taken
    back): the story is contradicted whichever the record took, so the merchant is told."""
    end = step(1, 0, E.CHECKOUT_CANCELED, ended)
    paid = step(2, 10 if paid_first else -10, E.PAYMENT_SUCCEEDED, S.SUCCEEDED)
    for order in ([end, paid], [paid, end]):
        assert fold_story(order).contradicted


@pytest.mark.parametrize(("first", "then"), [(S.EXPIRED, S.FAILED), (S.CANCELED, S.EXPIRED)])
def test_two_different_endings_contradict_in_either_order(first, then):
    """BTCPay: an invoice that expired, then marked invalid by hand in the same second. Whichever
    ending the record took first stays (terminal stays terminal), so the merchant is told in
    every order; the same ending twice is no contradiction."""
    a = step(1, 0, E.CHECKOUT_EXPIRED, first)
    b = step(2, 0, E.PAYMENT_FAILED, then)
    for order in ([a, b], [b, a]):
        assert fold_story(order).contradicted
    assert not fold_story([a, step(3, 0, E.CHECKOUT_EXPIRED, first)]).contradicted


@pytest.mark.parametrize("name", STORIES)
def test_the_stories_that_really_happen_are_not_contradicted(name):
    steps, subscription = STORIES[name]
    assert not fold_story(steps, subscription).contradicted


@pytest.mark.parametrize("order", list(itertools.permutations(range(4))))
def test_part_refunds_that_sum_to_the_whole_during_a_dispute_end_it_refunded(order):
    """Two part refunds dated while a dispute is open give back all of it: refunded, as one
    full refund during a dispute is (the table's disputed -> refunded), in any order."""
    given = [
        step(1, 0, E.PAYMENT_SUCCEEDED, S.SUCCEEDED),
        step(2, 10, E.PAYMENT_DISPUTED, S.DISPUTED),
        step(3, 20, *PARTIAL, refund=Refund(300, "re_1")),
        step(4, 30, E.PAYMENT_REFUNDED, S.REFUNDED, refund=Refund(AMOUNT - 300, "re_2")),
    ]
    outcome = fold_story([given[i] for i in order])
    assert (outcome.status, outcome.refunded_total or sum(a for _, a in outcome.refunds)) == (
        S.REFUNDED,
        AMOUNT,
    )


def test_a_dispute_won_on_a_checkout_that_failed_is_no_money_come_late():
    """A dispute's closing reports no payment (``Step.money``): on a failed checkout it
    changes nothing and is not late money."""
    outcome = fold_story(
        [
            step(1, 0, E.PAYMENT_FAILED, S.FAILED),
            step(2, 10, E.PAYMENT_DISPUTED, S.DISPUTED),
            step(3, 20, E.PAYMENT_DISPUTE_CLOSED, S.SUCCEEDED),
        ]
    )
    assert (outcome.status, outcome.late) == (S.FAILED, frozenset())
