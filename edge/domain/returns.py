"""Where a buyer coming back from a provider's page goes on to (CONTRACT 4.3, the node's return
address), and what they are told.

A buyer is sent to the merchant's success address only when the payment went through or is on
its way; every failure (they canceled, the provider declined their funding source, the
checkout ended) is said as what it is, never a "thank you" for a payment that will not come.
Pure: the transaction's status and what happened to it last come in, the outcome goes out.
"""

from __future__ import annotations

from enum import StrEnum

from edge.domain.events import EventType
from edge.domain.status import Status


class Outcome(StrEnum):
    PAID = "paid"
    PROCESSING = "processing"  # paid, awaiting the provider's confirmation
    PENDING = "pending"  # approved; the node's capture has not been answered yet
    DECLINED = "declined"  # the provider refused the funding source; nothing was charged
    CANCELED = "canceled"
    EXPIRED = "expired"

    @property
    def succeeded(self) -> bool:
        """The buyer goes on to the success address."""
        return self in (Outcome.PAID, Outcome.PROCESSING, Outcome.PENDING)


_PAID = frozenset({Status.SUCCEEDED, Status.PARTIALLY_REFUNDED, Status.REFUNDED, Status.DISPUTED})
_ENDED = {Status.CANCELED: Outcome.CANCELED, Status.EXPIRED: Outcome.EXPIRED}


def outcome(status: str, latest_event: str | None, *, canceled_by_buyer: bool) -> Outcome:
    """The outcome of a checkout the buyer is back from. ``latest_event``: the type of the last
    event stored for it; ``canceled_by_buyer``: they came back through the cancel address."""
    if status in _PAID:
        return Outcome.PAID
    if status == Status.PROCESSING:
        return Outcome.PROCESSING
    if status in _ENDED:
        return _ENDED[Status(status)]
    if status == Status.FAILED:
        # a provider that fails a payment after approval refused the money: a decline
        return Outcome.DECLINED
    if canceled_by_buyer:
        return Outcome.CANCELED
    if latest_event == EventType.PAYMENT_ATTEMPT_FAILED:
        return Outcome.DECLINED
    return Outcome.PENDING


def said(result: Outcome, provider: str) -> tuple[str, str]:
    """(heading, sentence) telling the buyer what happened at ``provider`` (its name)."""
    if result is Outcome.DECLINED:
        return (
            "Payment declined",
            f"{provider} declined the payment. You have not been charged: you can try again, "
            "with another way to pay if you like.",
        )
    if result is Outcome.CANCELED:
        return (
            "Payment canceled",
            f"The payment with {provider} was canceled. You have not been charged.",
        )
    if result is Outcome.EXPIRED:
        return (
            "Checkout expired",
            "This checkout ran out of time before it was paid. You have not been charged: "
            "start again from the shop.",
        )
    if result is Outcome.PAID:
        return ("Payment received", f"{provider} confirmed the payment. Taking you back…")
    return ("Payment on its way", f"{provider} is confirming the payment. Taking you back…")
