"""When the node asks a provider about a checkout whose webhook has not come (CONTRACT 4.3a),
without I/O.

A pending checkout is looked at every ``every_ms`` (5 minutes unless configured), so a payment
whose webhook never comes reaches its true status within that long: until the checkout's
``expiresAt``, and once more after it (the provider ends it then). A checkout with no expiry
(Paddle, whose transactions stay open) is looked at every ``every_ms`` for its first hour, then
hourly, for a week; so is a payment under way (``processing``: a bank debit, a crypto payment
waiting for confirmations), which settles after its checkout's end. A look may come later than
asked: the provider account's budget
(``edge.actors.pacing``) spreads many checkouts' looks over time.
"""

from __future__ import annotations

from edge.domain.status import Status

HOUR_MS = 3600 * 1000
WEEK_MS = 7 * 24 * HOUR_MS


def looks_end_at(status: str, expires_ms: int | None) -> int | None:
    """The checkout's end that bounds the looks at a transaction of ``status``: its
    ``expiresAt`` while it is unpaid (``pending``); none once the buyer paid and the money is
    settling (``processing``), which the provider reports after the checkout's end."""
    return expires_ms if status == Status.PENDING else None


def next_look_ms(now_ms: int, created_ms: int, expires_ms: int | None, every_ms: int) -> int | None:
    """When to look next at a checkout still open at ``now_ms``; None: no more looks."""
    if expires_ms is not None:
        last = expires_ms + every_ms
        if now_ms >= last:
            return None
        return min(now_ms + every_ms, last)
    age = now_ms - created_ms
    if age >= WEEK_MS:
        return None
    return now_ms + (every_ms if age < HOUR_MS else max(every_ms, HOUR_MS))


# How long the node keeps walking a provider account's lists after it last learned something
# by asking that no webhook had brought (its webhooks are not reaching the node).
WALK_FOR_MS = 7 * 24 * HOUR_MS


def walk_until_ms(learned_at_ms: int) -> int:
    """Until when a provider account's lists are walked, having learned by asking at
    ``learned_at_ms``."""
    return learned_at_ms + WALK_FOR_MS
