"""The timestamp window of providers that sign every attempt afresh (Stripe ``t``, Paddle
``ts``; CONTRACT 4.3): a signature more than the window old, or ahead, is refused, and the
refusal says by how much, so a merchant can tell a slow clock from a replay."""

from __future__ import annotations

from edge.providers.base import SignatureInvalid


def check_timestamp(timestamp: int, now_s: float, tolerance_s: int) -> None:
    """Raise ``timestamp_out_of_tolerance`` when ``timestamp`` is more than ``tolerance_s``
    seconds before or after ``now_s``."""
    offset = int(now_s - timestamp)
    if abs(offset) <= tolerance_s:
        return
    when = f"{offset} seconds old" if offset > 0 else f"{-offset} seconds in the future"
    raise SignatureInvalid(
        "timestamp_out_of_tolerance",
        f"The signature's timestamp is {when} (at most {tolerance_s} allowed).",
    )
