"""Paddle Billing: transactions paid in Paddle.js's overlay, signed webhooks, the customer
portal, refunds made once, and asking Paddle.

``adapter`` (the ``Provider``), ``api`` (calls to one account), ``signature`` (the
``Paddle-Signature`` scheme), ``events`` (the event table and readers), ``adjustments`` (refund
adjustments and the node's tag in their reason), ``sync`` (reading a checkout's objects and the
event stream), ``money`` (amount strings and the currencies Paddle takes), ``shapes`` (Paddle's
ids and times).
"""

from edge.providers.paddle.adapter import PADDLE

__all__ = ["PADDLE"]
