"""The overview's chart: successful payments per day over the last 30 days, as bars the page
draws as SVG on the server (no chart library, no script). Pure: transactions in, geometry out."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

DAYS = 30
WIDTH, HEIGHT = 600, 160
PAID = frozenset({"succeeded", "partially_refunded", "refunded", "disputed"})


@dataclass(frozen=True)
class Bar:
    day: str  # YYYY-MM-DD
    count: int
    x: float
    y: float
    width: float
    height: float


def daily_payments(
    transactions: Iterable[Mapping[str, Any]], today: dt.date
) -> list[tuple[str, int]]:
    """(day, payments made that day) for the 30 days up to ``today``, oldest first: a payment
    counts on the day its transaction was made, if it was paid at all."""
    days = [(today - dt.timedelta(days=n)).isoformat() for n in range(DAYS - 1, -1, -1)]
    counts = dict.fromkeys(days, 0)
    for tx in transactions:
        day = str(tx.get("createdAt", ""))[:10]
        if day in counts and tx.get("status") in PAID:
            counts[day] += 1
    return [(day, counts[day]) for day in days]


def bars(per_day: list[tuple[str, int]]) -> tuple[list[Bar], int]:
    """The bars, and the tallest count (the scale)."""
    top = max((count for _, count in per_day), default=0)
    slot = WIDTH / max(len(per_day), 1)
    out = []
    for n, (day, count) in enumerate(per_day):
        height = 0.0 if top == 0 else (HEIGHT - 20) * count / top
        out.append(Bar(day, count, n * slot + 2, HEIGHT - height, slot - 4, height))
    return out, top
