"""Paddle Billing: transactions paid in Paddle.js's overlay, signed webhooks, the customer
portal.

``adapter`` (the ``Provider``), ``signature`` (the ``Paddle-Signature`` scheme), ``events``
(the event table and readers), ``money`` (amount strings and the currencies Paddle takes).
"""

from edge.providers.paddle.adapter import PADDLE

__all__ = ["PADDLE"]
