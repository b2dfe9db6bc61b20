"""Stripe: hosted Checkout, signed webhooks, the billing portal.

``adapter`` (the ``Provider``), ``signature`` (the ``Stripe-Signature`` scheme), ``events`` (the
event table and readers), ``form`` (bracket form encoding), ``money`` (Stripe's minor units),
``api`` (calls), ``refunds`` (a refund exactly once), ``sync`` (asking Stripe: a transaction's
objects, the event list).
"""

from edge.providers.stripe.adapter import STRIPE

__all__ = ["STRIPE"]
