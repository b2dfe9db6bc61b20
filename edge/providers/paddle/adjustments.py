"""Paddle's refund adjustments as the node's refunds (``ProviderRefund``), and the tag that
ties one to the node's refund id. Pure: no I/O.

Paddle honours no idempotency key on ``POST /adjustments`` (openapi.yaml ``create-adjustment``
has no such header), so the node finds its own refund again by a tag it writes into the one
field an adjustment keeps as given: ``reason`` ("Why this adjustment was created. Appears in
the Paddle dashboard. Retained for record-keeping purposes", openapi.yaml ``adjustment``).
The tag is the node's refund id in brackets at the end: ``"Damaged in transit
[rf_01JD...]"``. A refund made in Paddle's dashboard has no such ending and is never the
node's.

Where a refund stands (``status-adjustment``): ``pending_approval`` until Paddle reviews it
(most live refunds; the sandbox approves every ten minutes), then ``approved`` (the money went
back) or ``rejected``; ``reversed`` is set "when a chargeback_reversal or credit_reversal
adjustment is created for this adjustment". Amounts are ``totals.total`` ("Total after tax"),
Paddle's minor-unit strings.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from edge.domain import ids
from edge.providers.base import (
    REFUND_FAILED,
    REFUND_PENDING,
    REFUND_SUCCEEDED,
    ProviderRefund,
)
from edge.providers.paddle.money import from_paddle
from edge.providers.paddle.shapes import paddle_id, time_ms
from edge.providers.reading import mapping, string

# What the node writes as a reason. openapi.yaml gives ``reason`` no maxLength and the API
# reference states no limit (developer.paddle.com/api-reference/adjustments/create-adjustment):
# 500 is the node's own bound, not a verified Paddle one; the tag always fits whole in it.
MAX_REASON = 500
DEFAULT_REASON = "Refund requested by the merchant"
_TAG = re.compile(r"\[(rf_[0-9A-HJKMNP-TV-Z]{26})\]\s*\Z")

STATES: Mapping[str, str] = {
    "pending_approval": REFUND_PENDING,
    "approved": REFUND_SUCCEEDED,
    "rejected": REFUND_FAILED,
    "reversed": REFUND_FAILED,
}
_DETAILS: Mapping[str, str] = {
    "pending_approval": "waiting for Paddle's approval",
    "rejected": "Paddle rejected it on review",
    "reversed": "Paddle reversed it",
}


def tagged(reason: object, refund_id: str) -> str:
    """The ``reason`` to send for the node's refund ``refund_id``: the merchant's reason (or a
    default) cut to fit, then `` [rf_...]``."""
    suffix = f" [{refund_id}]"
    text = reason.strip() if isinstance(reason, str) and reason.strip() else DEFAULT_REASON
    return text[: MAX_REASON - len(suffix)].rstrip() + suffix


def tag_of(reason: object) -> str | None:
    """The node's refund id a reason ends with; None for a reason the node did not write."""
    if not isinstance(reason, str):
        return None
    match = _TAG.search(reason)
    refund_id = match.group(1) if match else None
    return refund_id if refund_id and ids.is_ulid(refund_id[3:]) else None


def is_refund(adjustment: Mapping[str, Any]) -> bool:
    return adjustment.get("action") == "refund"


def provider_refund(adjustment: Mapping[str, Any]) -> ProviderRefund | None:
    """A refund adjustment as the node's ``ProviderRefund`` (amount in the node's minor units,
    state by ``STATES``: a status Paddle may add later counts as pending, so its money stays
    held); None for another action or an adjustment without an id."""
    adjustment_id = paddle_id(adjustment, "id", "adj_")
    if not is_refund(adjustment) or adjustment_id is None:
        return None
    status = string(adjustment, "status") or ""
    totals = mapping(adjustment, "totals")
    currency = adjustment.get("currency_code") or totals.get("currency_code")
    return ProviderRefund(
        id=adjustment_id,
        amount_minor=from_paddle(totals.get("total"), currency),
        state=STATES.get(status, REFUND_PENDING),
        created_ms=time_ms(adjustment.get("created_at")),
        tag=tag_of(adjustment.get("reason")),
        detail=_DETAILS.get(status, "" if status in STATES else f"status {status}"[:40]),
    )
