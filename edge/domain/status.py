"""Statuses and the two transition tables of CONTRACT §2.

Providers deliver events late, twice and out of order; the tables are what
keeps a status from moving backwards. An event whose target is not allowed
from the current status is stored but changes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from types import MappingProxyType


class Status(StrEnum):
    PENDING = "pending"
    PROCESSING = "processing"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELED = "canceled"
    EXPIRED = "expired"
    REFUNDED = "refunded"
    PARTIALLY_REFUNDED = "partially_refunded"
    DISPUTED = "disputed"
    TRIALING = "trialing"
    ACTIVE = "active"
    PAST_DUE = "past_due"
    PAUSED = "paused"


class Kind(StrEnum):
    PAYMENT = "payment"
    SUBSCRIPTION = "subscription"


S = Status

# Payments, and the transaction that starts a subscription. Every status a
# transaction can hold is a key; terminal ones map to the empty set.
PAYMENT_TRANSITIONS: Mapping[Status, frozenset[Status]] = MappingProxyType(
    {
        S.PENDING: frozenset({S.PROCESSING, S.SUCCEEDED, S.FAILED, S.CANCELED, S.EXPIRED}),
        # expired: a crypto invoice whose payment was replaced and then ran out of time
        S.PROCESSING: frozenset({S.SUCCEEDED, S.FAILED, S.CANCELED, S.EXPIRED}),
        S.SUCCEEDED: frozenset({S.PARTIALLY_REFUNDED, S.REFUNDED, S.DISPUTED}),
        S.PARTIALLY_REFUNDED: frozenset({S.REFUNDED, S.DISPUTED}),
        # Dispute won -> succeeded again, lost -> refunded; lost for part of the amount ->
        # partially refunded (CONTRACT 4.3a: a partial dispute moves only its amount).
        S.DISPUTED: frozenset({S.SUCCEEDED, S.REFUNDED, S.PARTIALLY_REFUNDED}),
        S.FAILED: frozenset(),
        S.CANCELED: frozenset(),
        S.EXPIRED: frozenset(),
        S.REFUNDED: frozenset(),
    }
)

SUBSCRIPTION_TRANSITIONS: Mapping[Status, frozenset[Status]] = MappingProxyType(
    {
        S.TRIALING: frozenset({S.ACTIVE, S.PAST_DUE, S.PAUSED, S.CANCELED}),
        S.ACTIVE: frozenset({S.PAST_DUE, S.PAUSED, S.CANCELED}),
        S.PAST_DUE: frozenset({S.ACTIVE, S.CANCELED}),
        S.PAUSED: frozenset({S.ACTIVE, S.CANCELED}),
        S.CANCELED: frozenset(),
    }
)

del S

_TABLES: Mapping[Kind, Mapping[Status, frozenset[Status]]] = MappingProxyType(
    {Kind.PAYMENT: PAYMENT_TRANSITIONS, Kind.SUBSCRIPTION: SUBSCRIPTION_TRANSITIONS}
)


def _table(table_kind: Kind | str) -> Mapping[Status, frozenset[Status]]:
    # An unknown kind is a programming error, not bad input: fail loudly.
    return _TABLES[Kind(table_kind)]


def _status(value: Status | str) -> Status | None:
    try:
        return Status(value)
    except ValueError:
        return None


def can_transition(table_kind: Kind | str, current: Status | str, target: Status | str) -> bool:
    """True iff the table of ``table_kind`` allows ``current -> target``.

    Same-status is False (it is not a change and must not bump ``version``);
    unknown statuses and statuses foreign to the table are False. An unknown
    ``table_kind`` raises ValueError.
    """
    table = _table(table_kind)
    cur, tgt = _status(current), _status(target)
    if cur is None or tgt is None:
        return False
    return tgt in table.get(cur, frozenset())


def _closure(table: Mapping[Status, frozenset[Status]]) -> Mapping[Status, frozenset[Status]]:
    """Every status reachable from each status in one or more steps."""
    reach: dict[Status, frozenset[Status]] = {}
    for start in table:
        seen: set[Status] = set()
        frontier = set(table[start])
        while frontier:
            seen |= frontier
            frontier = {n for s in frontier for n in table[s]} - seen
        reach[start] = frozenset(seen)
    return MappingProxyType(reach)


_REACH: Mapping[Kind, Mapping[Status, frozenset[Status]]] = MappingProxyType(
    {kind: _closure(table) for kind, table in _TABLES.items()}
)


def reachable(table_kind: Kind | str, current: Status | str) -> frozenset[Status]:
    """The statuses ``current`` can still come to, in one or more moves (itself only through a
    cycle: succeeded -> disputed -> succeeded)."""
    st = _status(current)
    return _REACH[Kind(table_kind)].get(st, frozenset()) if st is not None else frozenset()


# A checkout that can no longer be paid: nothing is captured or completed for it any more.
ENDED: frozenset[str] = frozenset({Status.FAILED, Status.CANCELED, Status.EXPIRED})
