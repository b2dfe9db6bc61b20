"""Paddle's webhook signature scheme (``edge.providers.timestamped`` does the work).

Header: ``Paddle-Signature: ts=<unix seconds>;h1=<hex>[;h1=<hex>...]``. Each ``h1`` is
HMAC-SHA256, keyed with the notification destination's secret as UTF-8, over
``b"<ts>:" + raw_body`` (paddle-python-sdk ``Notifications/PaddleSignature.py``). Paddle sends
several ``h1`` while a destination's secret is being rotated: any one may match. Paddle signs
every attempt afresh; its SDK allows 5 seconds, the node the adapter's window (CONTRACT 4.3:
300 s), in both directions. Unlike the SDK, which raises on a key it does not know, unknown
keys are skipped.
"""

from __future__ import annotations

from edge.providers import verifying
from edge.providers.timestamped import Scheme

WINDOW_S = verifying.WINDOW_S
PADDLE = Scheme("Paddle-Signature", ";", "ts", "h1", ":", WINDOW_S)
WEBHOOK = PADDLE.webhook()

sign_header = PADDLE.sign_header
parse_header = PADDLE.parse
signature_matches = PADDLE.matches
verify = PADDLE.verify
