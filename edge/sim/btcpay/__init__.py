"""A loopback BTCPay Server speaking Greenfield's wire format: the invoice API, an invoice page,
and webhooks signed, retried and redelivered as BTCPay sends them."""

from edge.sim.btcpay.events import SUPPORTED_TRIGGERS, delivery_id, event_for_trigger
from edge.sim.btcpay.server import BTCPaySimulator

__all__ = ["SUPPORTED_TRIGGERS", "BTCPaySimulator", "delivery_id", "event_for_trigger"]
