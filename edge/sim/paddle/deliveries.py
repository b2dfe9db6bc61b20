"""Signed Paddle notifications, as Paddle sends them: the one builder the simulator, ``edge
trigger`` and the tests use (tests/conformance checks it against the Paddle SDK's vectors)."""

from __future__ import annotations

import time
from collections.abc import Sequence

from edge.providers.paddle.signature import PADDLE


def signed(
    body: bytes, secrets: str | Sequence[str], timestamp: int | None = None
) -> dict[str, str]:
    """The headers of ``body`` signed at ``timestamp`` (now by default: Paddle signs every
    attempt afresh) with each of ``secrets`` (one ``h1`` each, as while a destination's secret
    rotates)."""
    at = int(time.time()) if timestamp is None else timestamp
    return {
        "Content-Type": "application/json",
        PADDLE.header: PADDLE.sign_header(secrets, body, at),
    }
