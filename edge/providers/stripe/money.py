"""Stripe's minor units, which are not always ISO 4217's. Pure: no I/O.

The node stores amounts in minor units by the ISO exponent (``edge.domain.money.EXPONENTS``).
Stripe counts them its own way (https://docs.stripe.com/currencies):

- zero-decimal currencies: the amount is in whole units (``ZERO_DECIMAL``; MGA among them,
  although ISO gives it two decimals);
- ISK: Stripe keeps it two-decimal, an amount of 100 is 1 króna (ISO: zero decimals);
- three-decimal currencies (``THREE_DECIMAL``) in thousandths;
- every other currency: hundredths.

``to_stripe`` and ``from_stripe`` convert one way and the other. A conversion that would lose a
fraction (1.50 MGA has no whole-unit Stripe amount) returns None: the caller decides whether that
refuses a checkout or leaves an event's amount unread.
"""

from __future__ import annotations

from edge.domain.money import EXPONENTS

ZERO_DECIMAL = frozenset(
    {"BIF", "CLP", "DJF", "GNF", "JPY", "KMF", "KRW", "MGA"}
    | {"PYG", "RWF", "UGX", "VND", "VUV", "XAF", "XOF", "XPF"}
)
THREE_DECIMAL = frozenset({"BHD", "JOD", "KWD", "OMR", "TND"})


def stripe_exponent(currency: str) -> int:
    """How many decimals a Stripe amount of ``currency`` (upper-case ISO code) carries."""
    if currency in ZERO_DECIMAL:
        return 0
    if currency in THREE_DECIMAL:
        return 3
    return 2


def to_stripe(minor: int, currency: str) -> int | None:
    """The Stripe amount for ``minor`` node minor units of ``currency``; None when Stripe cannot
    express it exactly."""
    return _rescale(minor, EXPONENTS[currency], stripe_exponent(currency))


def from_stripe(amount: int, currency: str) -> int | None:
    """The node's minor units for a Stripe ``amount`` of ``currency``; None when the node cannot
    express it exactly."""
    return _rescale(amount, stripe_exponent(currency), EXPONENTS[currency])


def _rescale(amount: int, from_exponent: int, to_exponent: int) -> int | None:
    if to_exponent >= from_exponent:
        return amount * 10 ** (to_exponent - from_exponent)
    whole, rest = divmod(amount, 10 ** (from_exponent - to_exponent))
    return None if rest else whole


# "The amount value supports up to eight digits" (stripe-python 16.1.0,
# params/_payment_intent_create_params.py:123)
MAX_AMOUNT = 99_999_999


def charge_problem(minor: int, currency: str) -> str | None:
    """Why Stripe refuses to charge ``minor`` node units of ``currency``; None when it does not.

    - an amount with a fraction Stripe's units cannot carry (a zero-decimal currency);
    - three-decimal currencies: "these API calls require the least-significant (last) digit to
      be 0" (docs.stripe.com/currencies, three-decimal currencies);
    - at most eight digits in Stripe's units."""
    amount = to_stripe(minor, currency)
    if amount is None:
        return f"Stripe charges {currency} in whole units: the amount has a fraction"
    if currency in THREE_DECIMAL and amount % 10:
        return f"Stripe charges {currency} in steps of 0.010: the last of three decimals must be 0"
    if amount > MAX_AMOUNT:
        return f"Stripe charges at most {MAX_AMOUNT:,} {currency} minor units (eight digits)"
    return None
