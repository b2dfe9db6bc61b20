"""PayPal: orders with an approval address and a capture the node owes, subscriptions,
certificate-signed webhooks.

``adapter`` (the ``Provider``), ``api`` (OAuth and JSON calls), ``signature`` (the webhook
scheme), ``certs`` (which signing certificates may be fetched), ``events`` (the event table and
readers), ``refunds`` (refunds made once, and found again), ``sync`` (asking PayPal what became
of a transaction, and its list of events), ``money`` (PayPal's decimal strings).
"""

from edge.providers.paypal.adapter import PAYPAL

__all__ = ["PAYPAL"]
