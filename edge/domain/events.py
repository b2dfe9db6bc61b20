"""The normalized event types of CONTRACT §6.

Each provider adapter maps its own event types onto these; the feed, the
dashboard and the merchant's server only ever see these values.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class EventType(StrEnum):
    CHECKOUT_CREATED = "checkout.created"
    PAYMENT_PROCESSING = "payment.processing"
    PAYMENT_SUCCEEDED = "payment.succeeded"
    PAYMENT_ATTEMPT_FAILED = "payment.attempt_failed"
    PAYMENT_FAILED = "payment.failed"
    CHECKOUT_EXPIRED = "checkout.expired"
    CHECKOUT_CANCELED = "checkout.canceled"
    PAYMENT_REFUNDED = "payment.refunded"
    PAYMENT_PARTIALLY_REFUNDED = "payment.partially_refunded"
    PAYMENT_DISPUTED = "payment.disputed"
    PAYMENT_DISPUTE_CLOSED = "payment.dispute_closed"
    SUBSCRIPTION_CREATED = "subscription.created"
    SUBSCRIPTION_UPDATED = "subscription.updated"
    SUBSCRIPTION_PAST_DUE = "subscription.past_due"
    SUBSCRIPTION_CANCELED = "subscription.canceled"
    SUBSCRIPTION_PAYMENT_SUCCEEDED = "subscription.payment_succeeded"
    SUBSCRIPTION_PAYMENT_FAILED = "subscription.payment_failed"
    MANUAL_MARKED_PAID = "manual.marked_paid"
    PAYMENT_PAID_LATE = "payment.paid_late"
    # money reported for a checkout that is not what it asked for: nothing moves (CONTRACT 4.3)
    PAYMENT_AMOUNT_MISMATCH = "payment.amount_mismatch"
    # a refund that failed after the provider took it (CONTRACT 4.3a), with its amount
    PAYMENT_REFUND_FAILED = "payment.refund_failed"
    # a warning before a chargeback: Paddle's chargeback_warning, Stripe's early fraud
    # warnings, a PayPal dispute still an inquiry
    PAYMENT_DISPUTE_WARNING = "payment.dispute_warning"
    # the merchant marked what needed their attention handled (``.../resolve``)
    PAYMENT_RESOLVED = "payment.resolved"
    UNMATCHED = "unmatched"


# Where an event came from (CONTRACT 6, ``source``): a provider's webhook, the provider's
# answer when the node asked it (sync, reconcile), or the node's own act (marked paid, a
# cancel, a refund recorded by hand, the answer to a call the node made).
SOURCE_WEBHOOK = "webhook"
SOURCE_SYNC = "sync"
SOURCE_NODE = "node"
SOURCES = (SOURCE_WEBHOOK, SOURCE_SYNC, SOURCE_NODE)


# The quota counts stored *webhook* events (CONTRACT §8). checkout.created is
# recorded by the node itself when it opens a checkout, not delivered by a
# provider; counting it would charge the merchant for their own traffic and
# could make a checkout push the project over quota before anything is paid.
QUOTA_EXEMPT: frozenset[EventType] = frozenset({EventType.CHECKOUT_CREATED})

# What ``edge trigger`` may ask a provider's simulator to send (CONTRACT 10): every type but
# those the node records itself (a checkout's creation, a payment marked by hand, an amount
# that does not match, a flag marked handled) and ``unmatched``, which is no event of its own.
# Each simulator sends some of them (``409 not_simulated`` for the others); together they send
# all (tests/sim/test_sim_registry.py holds them to it).
SIMULATED: tuple[EventType, ...] = tuple(
    t
    for t in EventType
    if t
    not in {
        EventType.CHECKOUT_CREATED,
        EventType.MANUAL_MARKED_PAID,
        EventType.PAYMENT_AMOUNT_MISMATCH,
        EventType.PAYMENT_RESOLVED,
        EventType.UNMATCHED,
    }
)


@dataclass(frozen=True)
class Simulated:
    """``edge trigger``'s ask: a signed, simulated ``event_type`` of ``provider`` about a
    transaction of ``project_id``, built from the project actor's ``material`` (the
    transaction, its subscription, the credentials to sign with) and delivered to the node at
    ``node_url``."""

    node_url: str
    project_id: str
    provider: str
    event_type: str
    material: Mapping[str, Any]
