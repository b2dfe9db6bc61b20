"""Stripe's webhook signature scheme (``edge.providers.timestamped`` does the work).

Header: ``Stripe-Signature: t=<unix seconds>,v1=<hex>[,v1=<hex>...]``. Each ``v1`` is
HMAC-SHA256, keyed with the whole ``whsec_...`` string (UTF-8, not base64-decoded), over
``b"<t>." + raw_body``. Other schemes (``v0``) are ignored. Unlike stripe-python, timestamps
more than the window in the future are refused too (CONTRACT 4.3).
"""

from __future__ import annotations

from edge.providers import verifying
from edge.providers.timestamped import Scheme

# Stripe's window: it signs every retry afresh (CONTRACT 4.3)
WINDOW_S = verifying.WINDOW_S
STRIPE = Scheme("Stripe-Signature", ",", "t", "v1", ".", WINDOW_S)
# the adapter's scheme: the endpoint's secret, and the one it replaced while Stripe still signs
# with both (a rolled secret stays valid for up to 24 hours)
WEBHOOK = STRIPE.webhook(("webhookSecret", "previousWebhookSecret"))

sign_header = STRIPE.sign_header
parse_header = STRIPE.parse
signature_matches = STRIPE.matches
verify = STRIPE.verify
