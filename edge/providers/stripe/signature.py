"""Stripe's webhook signature scheme (``edge.providers.timestamped`` does the work).

Header: ``Stripe-Signature: t=<unix seconds>,v1=<hex>[,v1=<hex>...]``. Each ``v1`` is
HMAC-SHA256, keyed with the whole ``whsec_...`` string (UTF-8, not base64-decoded), over
``b"<t>." + raw_body``. Other schemes (``v0``) are ignored. Unlike stripe-python, timestamps
more than the window in the future are refused too (CONTRACT 4.3).
"""

from __future__ import annotations

from edge.providers.timestamped import Scheme, check_timestamp, no_matching_signature

# Stripe's window (it signs every retry afresh); the adapter declares it as its
# ``signature_window_s``, and ``verify`` uses it unless told otherwise.
WINDOW_S = 300
SCHEME = "v1"
STRIPE = Scheme("Stripe-Signature", ",", "t", SCHEME, ".", WINDOW_S)

compute_signature = STRIPE.compute
sign_header = STRIPE.sign_header
parse_header = STRIPE.parse
signature_matches = STRIPE.matches
verify = STRIPE.verify

__all__ = [
    "SCHEME",
    "WINDOW_S",
    "check_timestamp",
    "compute_signature",
    "no_matching_signature",
    "parse_header",
    "sign_header",
    "signature_matches",
    "verify",
]
