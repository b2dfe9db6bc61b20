"""Stripe's webhook signature scheme (``edge.providers.timestamped`` does the work).

Header: ``Stripe-Signature: t=<unix seconds>,v1=<hex>[,v1=<hex>...]``. Each ``v1`` is
HMAC-SHA256, keyed with the whole ``whsec_...`` string (UTF-8, not base64-decoded), over
``b"<t>." + raw_body``. Other schemes (``v0``) are ignored. Unlike stripe-python, timestamps
more than the window in the future are refused too (CONTRACT 4.3).
"""

from __future__ import annotations

from edge.providers.timestamped import Scheme

# Stripe's window (it signs every retry afresh); the adapter declares it as its
# ``signature_window_s``, and ``verify`` uses it unless told otherwise.
WINDOW_S = 300
STRIPE = Scheme("Stripe-Signature", ",", "t", "v1", ".", WINDOW_S)

sign_header = STRIPE.sign_header
parse_header = STRIPE.parse
signature_matches = STRIPE.matches
verify = STRIPE.verify
