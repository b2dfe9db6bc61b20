import itertools

import pytest

from edge.domain.status import (
    PAYMENT_TRANSITIONS,
    SUBSCRIPTION_TRANSITIONS,
    Kind,
    Status,
    can_transition,
    reachable,
)

ALL = [s.value for s in Status]

# Written out from CONTRACT §2, independently of the module's tables.
PAYMENT_EXPECTED = {
    ("pending", "processing"), ("pending", "succeeded"), ("pending", "failed"),
    ("pending", "canceled"), ("pending", "expired"),
    ("processing", "succeeded"), ("processing", "failed"), ("processing", "canceled"),
    ("processing", "expired"),
    ("succeeded", "partially_refunded"), ("succeeded", "refunded"), ("succeeded", "disputed"),
    ("partially_refunded", "refunded"), ("partially_refunded", "disputed"),
    ("disputed", "succeeded"), ("disputed", "refunded"),
    # CONTRACT 4.3a: a dispute lost for part of the amount moves that part only
    ("disputed", "partially_refunded"),
}  # fmt: skip
SUBSCRIPTION_EXPECTED = {
    ("trialing", "active"), ("trialing", "past_due"), ("trialing", "paused"),
    ("trialing", "canceled"),
    ("active", "past_due"), ("active", "paused"), ("active", "canceled"),
    ("past_due", "active"), ("past_due", "canceled"),
    ("paused", "active"), ("paused", "canceled"),
}  # fmt: skip
PAYMENT_TERMINAL = {"failed", "canceled", "expired", "refunded"}
SUBSCRIPTION_TERMINAL = {"canceled"}


def test_thirteen_statuses():
    assert ALL == [
        "pending", "processing", "succeeded", "failed", "canceled", "expired", "refunded",
        "partially_refunded", "disputed", "trialing", "active", "past_due", "paused",
    ]  # fmt: skip
    assert [k.value for k in Kind] == ["payment", "subscription"]


@pytest.mark.parametrize(
    "kind,expected", [("payment", PAYMENT_EXPECTED), ("subscription", SUBSCRIPTION_EXPECTED)]
)
def test_every_pair(kind, expected):
    for cur, tgt in itertools.product(ALL, ALL):
        want = (cur, tgt) in expected
        assert can_transition(kind, cur, tgt) is want, (kind, cur, tgt)
        assert can_transition(Kind(kind), Status(cur), Status(tgt)) is want


def test_table_shapes():
    assert set(PAYMENT_TRANSITIONS) == {s for s, _ in PAYMENT_EXPECTED} | PAYMENT_TERMINAL
    assert set(SUBSCRIPTION_TRANSITIONS) == {"trialing", "active", "past_due", "paused", "canceled"}
    for table in (PAYMENT_TRANSITIONS, SUBSCRIPTION_TRANSITIONS):
        assert all(isinstance(v, frozenset) for v in table.values())
        with pytest.raises(TypeError):
            table["pending"] = frozenset()  # type: ignore[index]


@pytest.mark.parametrize(
    "kind,terminal,table",
    [
        ("payment", PAYMENT_TERMINAL, PAYMENT_TRANSITIONS),
        ("subscription", SUBSCRIPTION_TERMINAL, SUBSCRIPTION_TRANSITIONS),
    ],
)
def test_terminal_statuses_have_no_way_out(kind, terminal, table):
    for s in ALL:
        if s in table:
            assert (reachable(kind, s) == frozenset()) is (s in terminal), (kind, s)
            assert (table[s] == frozenset()) is (s in terminal)


def test_unknown_statuses_and_kinds():
    assert not can_transition("payment", "pending", "paid")
    assert not can_transition("payment", "nope", "succeeded")
    assert not can_transition("payment", "PENDING", "succeeded")
    with pytest.raises(ValueError):
        can_transition("invoice", "pending", "succeeded")
    with pytest.raises(ValueError):
        reachable("invoice", "canceled")


def _paths(expected: set[tuple[str, str]], start: str) -> set[str]:
    seen: set[str] = set()
    frontier = {t for f, t in expected if f == start}
    while frontier - seen:
        seen |= frontier
        frontier = {t for f, t in expected if f in seen}
    return seen


@pytest.mark.parametrize(
    "kind,expected", [("payment", PAYMENT_EXPECTED), ("subscription", SUBSCRIPTION_EXPECTED)]
)
def test_reachable_is_the_closure_of_the_table(kind, expected):
    for status in ALL:
        assert reachable(kind, status) == _paths(expected, status), (kind, status)


def test_reachable_through_the_dispute_cycle():
    assert Status.SUCCEEDED in reachable("payment", "succeeded")
    assert reachable("payment", "refunded") == frozenset()
    assert reachable("payment", "nope") == frozenset()
