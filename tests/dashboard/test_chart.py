"""The overview's 30-day chart (edge.dashboard.chart): paid transactions per day, scaled bars."""

from __future__ import annotations

import datetime as dt

from edge.dashboard import chart

TODAY = dt.date(2026, 11, 23)


def test_paid_transactions_count_on_the_day_they_were_made():
    txs = [
        {"createdAt": "2026-11-23T10:00:00.000Z", "status": "succeeded"},
        {"createdAt": "2026-11-23T11:00:00.000Z", "status": "refunded"},
        {"createdAt": "2026-11-23T12:00:00.000Z", "status": "pending"},
        {"createdAt": "2026-10-25T12:00:00.000Z", "status": "succeeded"},  # the first day
        {"createdAt": "2026-10-24T12:00:00.000Z", "status": "succeeded"},  # too old
    ]
    per_day = chart.daily_payments(txs, TODAY)
    assert len(per_day) == 30
    assert per_day[0] == ("2026-10-25", 1) and per_day[-1] == ("2026-11-23", 2)
    assert sum(count for _, count in per_day) == 3


def test_bars_scale_to_the_busiest_day():
    bars, top = chart.bars([("a", 0), ("b", 2), ("c", 1)])
    assert top == 2
    assert bars[0].height == 0 and bars[1].height == chart.HEIGHT - 20
    assert bars[2].height == (chart.HEIGHT - 20) / 2
    assert bars[1].y == chart.HEIGHT - bars[1].height
    assert chart.bars([("a", 0)])[0][0].height == 0  # an empty month draws no bar
