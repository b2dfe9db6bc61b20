"""A loopback Stripe simulator speaking Stripe's wire format (API objects, form-encoded
requests, ``Stripe-Signature`` webhooks)."""

from edge.sim.stripe.events import SUPPORTED_TRIGGERS, build_event, event_for_trigger
from edge.sim.stripe.server import StripeSimulator

__all__ = ["SUPPORTED_TRIGGERS", "StripeSimulator", "build_event", "event_for_trigger"]
