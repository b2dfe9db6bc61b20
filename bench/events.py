"""Pools of correctly signed Stripe webhook deliveries, each with its own event id.

The events are the Stripe simulator's own (``event_for_trigger``) for real transactions of the
bench project, so they match, move the transaction where the tables allow, and are stored as
history otherwise. One template per (transaction, trigger); each delivery only gets a fresh
event id (the dedup key) and a signature made with a fresh timestamp (tolerance 300 s).

A pool file has one delivery per line: ``<Stripe-Signature>\\t<body>`` (bodies are one-line
JSON), read by ``webhook.lua`` and by ``loadgen``.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from edge.providers.stripe.signature import sign_header
from edge.sim.stripe import event_for_trigger

# Per transaction, in this order: paid, half refunded, fully refunded, disputed; later rounds
# are stored as history without a transition (statuses never move backwards).
TRIGGERS = (
    "payment.succeeded",
    "payment.partially_refunded",
    "payment.refunded",
    "payment.disputed",
)
_PLACEHOLDER = "evt_BENCHPLACEHOLDER"


def templates(txs: Sequence[dict[str, Any]]) -> list[str]:
    """One body template per (trigger, transaction), in delivery order."""
    out = []
    for trigger in TRIGGERS:
        for tx in txs:
            event = event_for_trigger(trigger, tx)
            event["id"] = _PLACEHOLDER
            out.append(json.dumps(event, separators=(",", ":")))
    return out


def deliveries(bodies: Sequence[str], count: int, secret: str) -> Iterator[tuple[str, bytes]]:
    """``count`` (signature header, body) pairs with unique event ids, signed now."""
    timestamp = int(time.time())
    for i in range(count):
        body = (
            bodies[i % len(bodies)]
            .replace(_PLACEHOLDER, "evt_" + secrets.token_hex(12), 1)
            .encode()
        )
        yield sign_header(secret, body, timestamp), body


def write_pool(path: Path, bodies: Sequence[str], count: int, secret: str) -> Path:
    with open(path, "wb") as out:
        for header, body in deliveries(bodies, count, secret):
            out.write(header.encode() + b"\t" + body + b"\n")
    return path


def read_pool(path: Path) -> list[tuple[str, bytes]]:
    pool = []
    with open(path, "rb") as lines:
        for line in lines:
            header, _, body = line.rstrip(b"\n").partition(b"\t")
            pool.append((header.decode(), body))
    return pool
