"""Paddle's money: strings of an integer in the currency's lowest denomination (spec ``money``:
"e.g. 10 USD = 1000 (cents) ... this value must be a valid integer"), in the currencies
Paddle takes (spec ``currency_code``). Pure: no I/O.

Paddle's docs give two decimals for most currencies and none for JPY (``"100"`` is 100 JPY,
developer.paddle.com/api-reference/currencies, api-reference/about/data-types): its lowest
denomination is the ISO 4217 minor unit, unlike Stripe's and PayPal's own tables. So a Paddle
amount is the node's minor units (``edge.domain.money``) written as a string; what this module
adds is the string form and the currency list. No currency Paddle takes has three decimals: a
KWD checkout is refused, not rescaled.
"""

from __future__ import annotations

import re

from edge.domain.money import EXPONENTS

CURRENCIES = frozenset(
    {
        "USD", "EUR", "GBP", "JPY", "AUD", "CAD", "CHF", "HKD", "SGD", "SEK", "ARS",
        "BRL", "CNY", "COP", "CZK", "DKK", "HUF", "ILS", "INR", "KRW", "MXN", "NOK",
        "NZD", "PLN", "RUB", "THB", "TRY", "TWD", "UAH", "VND", "ZAR",
    }
)  # fmt: skip
_AMOUNT = re.compile(r"0|[1-9][0-9]{0,17}")


def to_paddle(minor: int, currency: str) -> str | None:
    """The ``amount`` string for ``minor`` node units of ``currency``; None when Paddle does
    not take the currency (or the amount is negative)."""
    if currency not in CURRENCIES or minor < 0:
        return None
    return str(minor)


def from_paddle(amount: object, currency: object) -> int | None:
    """The node's minor units of a Paddle ``{amount, currency_code}``; None when it is not an
    integer string or not a currency the node knows. A currency Paddle might add later is
    read by its ISO exponent, which is what "lowest denomination" has meant for all of them."""
    if not isinstance(amount, str) or not isinstance(currency, str):
        return None
    if currency not in EXPONENTS or not _AMOUNT.fullmatch(amount):
        return None
    return int(amount)
