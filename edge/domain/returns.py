"""Where a buyer coming back from a provider's page goes on to (CONTRACT 4.3, the node's return
address), and what they are told.

A buyer is sent to the merchant's success address only when the payment went through or is on
its way; every failure (they canceled, the provider declined their funding source, the
checkout ended) is said as what it is, never a "thank you" for a payment that will not come.
Pure: the transaction's status and what happened to it last come in, the outcome and the
keys of the words that tell it (in the buyer's language, edge.i18n) go out.
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


def said(result: Outcome) -> tuple[str, str]:
    """The keys of the buyer's catalogue (edge/i18n/buyer) that tell what happened: (heading,
    sentence); the sentence names the provider as ``{provider}``. A payment still being
    confirmed is said alike whether the provider or the node's capture is the one pending."""
    name = Outcome.PROCESSING if result is Outcome.PENDING else result
    return f"return.{name}.heading", f"return.{name}.text"
