"""How far a node's wall clock is from its store's, in cluster mode: pure, clock-free.

Nodes that share a PostgreSQL store stamp the entries they share (an attempt's hold on a
refund or a notification, a checkout's recorded call) and compare them with each other's
stamps. Each node reads PostgreSQL's clock with its heartbeat and keeps the offset
(``store - local``, milliseconds); every node then stamps by the store's time, so a node whose
clock is off by seconds neither takes an entry another node still holds nor waits past one's
end.

One reading: the store's instant was taken somewhere between ``sent_ms`` and ``got_ms`` by the
local clock, so the midpoint is off by at most half the round trip.
"""

from __future__ import annotations

# A reading that moves the offset by no more than its own uncertainty and this is not taken:
# the offset stays put rather than jitter by a network's wobble from one beat to the next.
SETTLE_MS = 20
# A reading slower than this bounds the offset too loosely to correct a known one.
MAX_ROUND_TRIP_MS = 2_000


def offset_after(current: int | None, store_ms: int, sent_ms: int, got_ms: int) -> int | None:
    """The offset to keep after one reading of the store's clock (``store_ms``), asked at
    ``sent_ms`` and answered at ``got_ms`` by the local clock; ``current``: the one kept so far
    (None before the first reading). A reading whose local clock went backwards between its
    two instants (stepped meanwhile) tells nothing."""
    round_trip = got_ms - sent_ms
    if round_trip < 0:
        return current
    measured = store_ms - (sent_ms + got_ms) // 2
    if current is None:
        return measured
    if round_trip > MAX_ROUND_TRIP_MS:
        return current
    if abs(measured - current) <= round_trip // 2 + SETTLE_MS:
        return current
    return measured
