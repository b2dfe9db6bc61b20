"""BTCPay Server Greenfield: invoices, webhooks (``adapter``, ``events``, ``signature``,
``money``)."""

from edge.providers.btcpay.adapter import BTCPAY

__all__ = ["BTCPAY"]
