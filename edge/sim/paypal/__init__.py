"""A loopback PayPal simulator speaking PayPal's wire format (Orders v2, Payments v2,
Subscriptions v1, webhooks signed with a certificate it makes and serves)."""

from edge.sim.paypal.events import SUPPORTED_TRIGGERS, event_for_trigger
from edge.sim.paypal.server import PayPalSimulator

__all__ = ["SUPPORTED_TRIGGERS", "PayPalSimulator", "event_for_trigger"]
