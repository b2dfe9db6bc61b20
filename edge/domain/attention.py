"""Why a transaction needs its merchant, in words a merchant can act on (CONTRACT 2, 4.3a).

A transaction keeps a flag for each thing it needs the merchant for (``attention``): a code,
the event that raised it and, where money is concerned, the amount. ``in_words`` says one
flag as one sentence; the merchant API carries it as the flag's ``reason`` and the dashboard
shows it. Pure: the flag and the provider's name come in, the sentence goes out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .money import EXPONENTS, to_major

AMOUNT_MISMATCH = "amount_mismatch"
PAID_LATE = "paid_late"
CONTRADICTED = "contradicted"
CAPTURE_REFUSED = "capture_refused"
REFUND_FAILED = "refund_failed"  # a refund failed after the provider took it, or was refused
REFUND_UNKNOWN = "refund_unknown"  # the node stopped asking a refund's outcome
DISPUTE_WARNING = "dispute_warning"  # a chargeback may follow
DISPUTED = "disputed"  # the buyer's bank opened a dispute
DISPUTE_WON = "dispute_won"
DISPUTE_LOST = "dispute_lost"
NOT_AT_PROVIDER = "not_at_provider"  # asked, the provider does not know the checkout
STILL_OPEN = "still_open"  # asked for a week, the provider still holds the checkout open
# asked for a week, the buyer's payment is still processing (a bank debit, confirmations)
STILL_PROCESSING = "still_processing"
CODES = (
    AMOUNT_MISMATCH,
    PAID_LATE,
    CONTRADICTED,
    CAPTURE_REFUSED,
    REFUND_FAILED,
    REFUND_UNKNOWN,
    DISPUTE_WARNING,
    DISPUTED,
    DISPUTE_WON,
    DISPUTE_LOST,
    NOT_AT_PROVIDER,
    STILL_OPEN,
    STILL_PROCESSING,
)


def money(minor: int, currency: str) -> str:
    """``19.99 EUR``, ``1,500 JPY``: the currency's own decimals."""
    places = EXPONENTS.get(currency, 2)
    return (
        f"{to_major(minor, currency):,.{places}f} {currency}"
        if currency in EXPONENTS
        else (f"{minor} (minor units of {currency})")
    )


def in_words(flag: Mapping[str, Any], provider: str) -> str:
    """One sentence for the flag; ``provider`` is the provider's name (``Stripe``)."""
    code = flag.get("code")
    amount = _amount(flag)
    if code == AMOUNT_MISMATCH:
        paid = amount or f"an amount the node cannot read ({flag.get('providerAmount')})"
        asked = money(flag["expectedAmount"], flag["expectedCurrency"])
        return (
            f"{provider} reported {paid} paid for this checkout of {asked}. It did not complete"
            f" the checkout: refund that payment in {provider}, or ask the buyer to pay the rest."
        )
    if code == PAID_LATE:
        paid = f" ({amount})" if amount else ""
        return (
            f"Money arrived after this checkout ended{paid}: fulfil the order, or refund it,"
            " then mark this handled."
        )
    if code == CONTRADICTED:
        return (
            f"{provider} reported this checkout both paid and ended. Look the payment up in"
            f" {provider}'s dashboard, then fulfil or refund it."
        )
    if code == CAPTURE_REFUSED:
        return (
            f"{provider} refused to take the approved payment: another order of your account"
            " already carries this checkout's invoice id (your account blocks duplicate invoice"
            " ids). The buyer was not charged for this checkout."
        )
    if code == REFUND_FAILED:
        why = f" ({flag['detail']})" if flag.get("detail") else ""
        return (
            f"A refund{_of(amount)} failed at {provider}{why}: the buyer has not got that money"
            " back. Refund it again, or another way."
        )
    if code == REFUND_UNKNOWN:
        return (
            f"{provider} never answered the refund{_of(amount)}: its amount stays held until"
            f" {provider} reports it. Look it up in {provider}'s dashboard before refunding"
            " again."
        )
    if code == DISPUTE_WARNING:
        return (
            f"{provider} warned that the buyer's bank may take back{_of(amount, ' ')}: a"
            " chargeback may follow. Refunding now avoids a dispute fee."
        )
    if code == DISPUTED:
        return (
            f"The buyer disputed{_of(amount, ' ')} with their bank: answer the dispute in"
            f" {provider}'s dashboard before its deadline."
        )
    if code == DISPUTE_WON:
        return f"The dispute{_of(amount)} was decided for you: the money stays yours."
    if code == DISPUTE_LOST:
        return f"The dispute was lost:{_of(amount, ' ')} went back to the buyer."
    if code == NOT_AT_PROVIDER:
        return (
            f"{provider} does not know this checkout: asked, it found no payment for it. Check"
            f" the credentials, or look the payment up in {provider}'s dashboard."
        )
    if code == STILL_OPEN:
        return (
            f"{provider} still holds this checkout open and unpaid after a week: the node"
            " stopped asking. Cancel it here, or look it up in"
            f" {provider}'s dashboard."
        )
    if code == STILL_PROCESSING:
        return (
            f"{provider} still reports this payment processing a week after the checkout: the"
            " buyer paid, and the money has not settled. The node stopped asking; look it up"
            f" in {provider}'s dashboard before you ship."
        )
    return f"{provider} reported something about this payment that needs you: {code}."


def _amount(flag: Mapping[str, Any]) -> str | None:
    amount, currency = flag.get("amount"), flag.get("currency")
    if isinstance(amount, int) and isinstance(currency, str):
        return money(amount, currency)
    return None


def _of(amount: str | None, joiner: str = " of ") -> str:
    return f"{joiner}{amount}" if amount else ("" if joiner == " of " else " money")
