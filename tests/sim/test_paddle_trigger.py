"""``edge trigger paddle`` sends the money events that come after a payment (CONTRACT 4.3a, 10):
a refund Paddle rejected on review (``payment.refund_failed``) and a chargeback warning
(``payment.dispute_warning``), signed, through a running node's whole pipeline, each stored on
the transaction it names."""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest
import trio
from support.client import bearer
from support.paddle_shop import paddle_shop

from edge.domain.events import EventType as E


@pytest.mark.parametrize(
    ("normalized", "paddle_type"),
    [
        (E.PAYMENT_REFUND_FAILED, "adjustment.updated"),
        (E.PAYMENT_DISPUTE_WARNING, "adjustment.created"),
    ],
)
async def test_the_money_events_after_a_payment_can_be_triggered(
    admin, http, node, paddle, normalized, paddle_type
):
    shop = await paddle_shop(admin, paddle)
    made = await http.post(
        f"/api/checkout/paddle/{shop.project_id}",
        json={"productId": "ten"},
        headers=bearer(shop.test_key),
    )
    assert made.status_code == 201, made.text
    tx_id = made.json()["txId"]
    sent = await trio.run_process(
        [sys.executable, "-m", "edge", "trigger", "paddle", str(normalized), "--tx", tx_id]
        + ["--data", str(node.ctx.settings.data_dir), "--json"],
        capture_stdout=True,
        capture_stderr=True,
        check=False,
    )
    assert sent.returncode == 0, sent.stderr
    result: dict[str, Any] = json.loads(sent.stdout)
    assert (result["status"], result["providerType"]) == (200, paddle_type)
    assert result["answer"]["duplicate"] is False
    record = await http.get(
        f"/api/projects/{shop.project_id}/transactions/{tx_id}", headers=bearer(shop.test_key)
    )
    stored = [
        e for e in record.json()["events"] if e["providerEventId"] == result["providerEventId"]
    ]
    assert [e["type"] for e in stored] == [str(normalized)]  # matched: on its transaction
