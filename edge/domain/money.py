"""Money as integer minor units (CONTRACT §1).

Amounts arrive and leave as JSON numbers in major units, but inside the node
money is always an ``int`` count of minor units. Floating point never enters:
callers parse JSON with ``parse_float=Decimal`` and ``to_minor`` refuses
floats outright, so 0.1 + 0.2 style errors cannot reach stored amounts.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import MAX_EMAX, MAX_PREC, MIN_EMIN, Context, Decimal
from types import MappingProxyType

from .errors import InvalidInput

# Every active ISO 4217 currency with minor units (list of 2025; funds codes
# such as BOV/CLF/COU/MXV/UYI/UYW included because providers accept some of
# them). Precious metals, XDR, XSU, XUA, XTS and XXX have no minor unit and no
# use in a checkout, so they are left out. ANG is kept through its phase-out.
EXPONENTS: Mapping[str, int] = MappingProxyType(
    {
        "AED": 2, "AFN": 2, "ALL": 2, "AMD": 2, "ANG": 2, "AOA": 2, "ARS": 2, "AUD": 2,
        "AWG": 2, "AZN": 2, "BAM": 2, "BBD": 2, "BDT": 2, "BGN": 2, "BHD": 3, "BIF": 0,
        "BMD": 2, "BND": 2, "BOB": 2, "BOV": 2, "BRL": 2, "BSD": 2, "BTN": 2, "BWP": 2,
        "BYN": 2, "BZD": 2, "CAD": 2, "CDF": 2, "CHE": 2, "CHF": 2, "CHW": 2, "CLF": 4,
        "CLP": 0, "CNY": 2, "COP": 2, "COU": 2, "CRC": 2, "CUC": 2, "CUP": 2, "CVE": 2,
        "CZK": 2, "DJF": 0, "DKK": 2, "DOP": 2, "DZD": 2, "EGP": 2, "ERN": 2, "ETB": 2,
        "EUR": 2, "FJD": 2, "FKP": 2, "GBP": 2, "GEL": 2, "GHS": 2, "GIP": 2, "GMD": 2,
        "GNF": 0, "GTQ": 2, "GYD": 2, "HKD": 2, "HNL": 2, "HTG": 2, "HUF": 2, "IDR": 2,
        "ILS": 2, "INR": 2, "IQD": 3, "IRR": 2, "ISK": 0, "JMD": 2, "JOD": 3, "JPY": 0,
        "KES": 2, "KGS": 2, "KHR": 2, "KMF": 0, "KPW": 2, "KRW": 0, "KWD": 3, "KYD": 2,
        "KZT": 2, "LAK": 2, "LBP": 2, "LKR": 2, "LRD": 2, "LSL": 2, "LYD": 3, "MAD": 2,
        "MDL": 2, "MGA": 2, "MKD": 2, "MMK": 2, "MNT": 2, "MOP": 2, "MRU": 2, "MUR": 2,
        "MVR": 2, "MWK": 2, "MXN": 2, "MXV": 2, "MYR": 2, "MZN": 2, "NAD": 2, "NGN": 2,
        "NIO": 2, "NOK": 2, "NPR": 2, "NZD": 2, "OMR": 3, "PAB": 2, "PEN": 2, "PGK": 2,
        "PHP": 2, "PKR": 2, "PLN": 2, "PYG": 0, "QAR": 2, "RON": 2, "RSD": 2, "RUB": 2,
        "RWF": 0, "SAR": 2, "SBD": 2, "SCR": 2, "SDG": 2, "SEK": 2, "SGD": 2, "SHP": 2,
        "SLE": 2, "SOS": 2, "SRD": 2, "SSP": 2, "STN": 2, "SVC": 2, "SYP": 2, "SZL": 2,
        "THB": 2, "TJS": 2, "TMT": 2, "TND": 3, "TOP": 2, "TRY": 2, "TTD": 2, "TWD": 2,
        "TZS": 2, "UAH": 2, "UGX": 0, "USD": 2, "USN": 2, "UYI": 0, "UYU": 2, "UYW": 4,
        "UZS": 2, "VED": 2, "VES": 2, "VND": 0, "VUV": 0, "WST": 2, "XAF": 0, "XCD": 2,
        "XCG": 2, "XOF": 0, "XPF": 0, "YER": 2, "ZAR": 2, "ZMW": 2, "ZWG": 2,
    }
)  # fmt: skip

# Largest amount accepted, in minor units: far above any real checkout, far
# below where a float major-unit value could lose a digit on the wire.
MAX_MINOR = 10**15


class MoneyError(InvalidInput):
    """An amount or currency that breaks the money rules."""


def exponent(currency: str) -> int:
    """Minor-unit exponent of an upper-case ISO 4217 code; MoneyError otherwise."""
    try:
        return EXPONENTS[currency]
    except (KeyError, TypeError):
        raise MoneyError(
            f"{currency!r} is not a supported ISO 4217 currency code (upper case, e.g. 'EUR').",
            field="currency",
            code="invalid_currency",
        ) from None


def to_minor(amount: Decimal | int, currency: str, field: str = "amount") -> int:
    """Exact major -> minor conversion, or MoneyError.

    Accepts int and finite Decimal only, 0 <= value, no more decimal places
    than the currency has (trailing zeros do not count: 19.990 EUR is 1999),
    and at most MAX_MINOR minor units. Never rounds. Work is bounded even for
    hostile Decimals like ``1E+999999``.
    """
    exp = exponent(currency)

    def fail(message: str) -> MoneyError:
        return MoneyError(message, field=field, code="invalid_amount")

    # bool is an int subclass; True must not become 1 EUR.
    if isinstance(amount, bool) or not isinstance(amount, (int, Decimal)):
        raise fail("The amount must be a number.")
    if isinstance(amount, int):
        if amount < 0:
            raise fail("The amount must not be negative.")
        minor = amount * 10**exp if amount <= MAX_MINOR else MAX_MINOR + 1
    else:
        if not amount.is_finite():
            raise fail("The amount must be a finite number.")
        sign, digits, dexp = amount.as_tuple()
        assert isinstance(dexp, int)
        text = "".join(map(str, digits)).rstrip("0")
        if not text:
            return 0
        if sign:
            raise fail("The amount must not be negative.")
        # Trailing zeros were stripped, so a negative scale now means a
        # fraction the currency cannot express.
        scale = dexp + (len(digits) - len(text)) + exp
        if scale < 0:
            raise fail(f"{currency} amounts have at most {exp} decimal places.")
        if len(text) + scale > len(str(MAX_MINOR)):
            minor = MAX_MINOR + 1
        else:
            minor = int(text) * 10**scale
    if minor > MAX_MINOR:
        raise fail("The amount is too large.")
    return minor


def _check_minor(minor: int) -> None:
    if isinstance(minor, bool) or not isinstance(minor, int):
        raise TypeError(f"minor units must be an int, not {type(minor).__name__}")


def to_major(minor: int, currency: str) -> Decimal:
    """The exact major-unit Decimal of ``minor`` (1999 EUR -> Decimal('19.99'))."""
    _check_minor(minor)
    return Decimal(minor).scaleb(-exponent(currency))


def to_wire(minor: int, currency: str) -> int | float:
    """The JSON number for ``minor``: an int for zero-exponent currencies, else a float.

    For |minor| <= MAX_MINOR the float's repr (what json.dumps writes) is
    exactly the decimal major amount, because every decimal of at most 15
    significant digits survives a round trip through a double.
    """
    _check_minor(minor)
    places = exponent(currency)
    if places == 0:
        return int(minor)
    # IEEE division is correctly rounded and both operands are exact (|minor| < 2**53), so this
    # is the double nearest the decimal amount: the same float as parsing its digits, cheaply.
    return minor / 10**places


# wide enough for any amount a body can spell: normalizing never overflows (an amount its
# currency cannot hold is refused where it is used, ``to_minor``)
_SPELLING = Context(prec=MAX_PREC, Emax=MAX_EMAX, Emin=MIN_EMIN)


def spelled(amount: Decimal | int | None) -> str | None:
    """One spelling of an amount: 5, 5.0 and 5.00 are the same amount asked for."""
    return None if amount is None else str(Decimal(amount).normalize(_SPELLING))
