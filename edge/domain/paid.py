"""The money rule of matching (CONTRACT 4.3): an event that reports money paid for a checkout
may complete it only when it is the checkout's amount in the checkout's currency.

Both sides are the node's minor units of the same currency, converted exactly from the
provider's own units (each adapter's ``money``): an amount the node cannot read exactly is no
amount at all here, and never matches.
"""

from __future__ import annotations


def paid_as_asked(
    asked_amount: int, asked_currency: str, paid_amount: int | None, paid_currency: str | None
) -> bool:
    """Is ``paid_amount`` in ``paid_currency`` exactly what the checkout asked for?"""
    return (
        paid_amount is not None
        and paid_currency is not None
        and paid_amount == asked_amount
        and paid_currency.upper() == asked_currency.upper()
    )
