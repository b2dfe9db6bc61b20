"""PayPal's money: decimal strings (``"19.99"``), in the currencies PayPal takes, with PayPal's
own decimals: none for JPY, HUF and TWD (HUF and TWD have two in ISO 4217), two for the rest
(https://developer.paypal.com/reference/currency-codes/). No currency PayPal takes has three.
The node keeps ISO minor units (``edge.domain.money``), so both ways go through here."""

from __future__ import annotations

import re
from decimal import Decimal

from edge.domain.money import EXPONENTS

CURRENCIES = frozenset(
    {
        "AUD", "BRL", "CAD", "CNY", "CZK", "DKK", "EUR", "HKD", "HUF", "ILS", "JPY", "MYR",
        "MXN", "TWD", "NZD", "NOK", "PHP", "PLN", "GBP", "SGD", "SEK", "CHF", "THB", "USD",
    }
)  # fmt: skip
NO_DECIMALS = frozenset({"JPY", "HUF", "TWD"})
_VALUE = re.compile(r"(0|[1-9][0-9]{0,14})(\.[0-9]{1,2})?")


def decimals(currency: str) -> int:
    return 0 if currency in NO_DECIMALS else 2


def to_paypal(minor: int, currency: str) -> str | None:
    """The ``amount.value`` for ``minor`` ISO units; None when PayPal cannot charge it (a
    currency it does not take, or a fraction it has no decimals for)."""
    if currency not in CURRENCIES or minor < 0:
        return None
    major = Decimal(minor).scaleb(-EXPONENTS[currency])
    places = decimals(currency)
    quantized = major.quantize(Decimal(1).scaleb(-places))
    if quantized != major:
        return None
    return f"{quantized:f}"


def from_paypal(value: object, currency: object) -> int | None:
    """ISO minor units of a PayPal ``{currency_code, value}``; None when it is not a valid
    amount in a currency the node knows."""
    if not isinstance(value, str) or not isinstance(currency, str):
        return None
    if currency not in EXPONENTS or not _VALUE.fullmatch(value):
        return None
    minor = Decimal(value).scaleb(EXPONENTS[currency])
    return int(minor) if minor == minor.to_integral_value() else None
