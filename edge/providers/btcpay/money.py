"""BTCPay's money: the invoice ``amount`` is a decimal string in the invoice currency
(``"19.99"``, ``"1500"`` for JPY); BTCPay rounds it to the currency's own divisibility, which for
fiat is ISO 4217's. The node keeps ISO minor units (``edge.domain.money``), so both ways go
through here."""

from __future__ import annotations

import re
from decimal import ROUND_HALF_UP, Decimal

from edge.domain.money import EXPONENTS

_VALUE = re.compile(r"(0|[1-9][0-9]{0,17})(\.[0-9]{1,12})?")
_SIGNED = re.compile(r"-?(0|[1-9][0-9]{0,17})(\.[0-9]{1,28})?")
_ONE = Decimal(1)


def to_btcpay(minor: int, currency: str) -> str:
    """The ``amount`` string for ``minor`` ISO units of ``currency``, with its ISO decimals."""
    places = EXPONENTS[currency]
    return f"{Decimal(minor).scaleb(-places):.{places}f}"


def from_btcpay(value: object, currency: object) -> int | None:
    """ISO minor units of a BTCPay amount; None when it is not a plain decimal in a currency the
    node knows, or has a fraction the currency has no minor unit for."""
    if not isinstance(value, str) or not isinstance(currency, str):
        return None
    if currency not in EXPONENTS or not _VALUE.fullmatch(value):
        return None
    minor = Decimal(value).scaleb(EXPONENTS[currency])
    return int(minor) if minor == minor.to_integral_value() else None


def decimal_of(value: object) -> Decimal | None:
    """A Greenfield decimal string (``"0.00012345"``, ``"-1.5"``) as a ``Decimal``; None when it
    is not one."""
    if not isinstance(value, str) or not _SIGNED.fullmatch(value):
        return None
    return Decimal(value)


def at_rate(value: object, rate: object, currency: str) -> int | None:
    """ISO minor units of ``currency`` for ``value`` of a payment method's currency (BTC) at
    ``rate`` (the invoice currency per unit, Greenfield's ``InvoicePaymentMethodDataModel.rate``),
    rounded half up to the currency's minor unit; None when either is not a decimal string or
    the currency is unknown."""
    amount, per_unit = decimal_of(value), decimal_of(rate)
    if amount is None or per_unit is None or currency not in EXPONENTS:
        return None
    return int((amount * per_unit).scaleb(EXPONENTS[currency]).quantize(_ONE, ROUND_HALF_UP))
