"""Paddle refunds made exactly once (CONTRACT 4.3a): ``send_refund`` makes a refund adjustment
tagged with the node's refund id, ``refunds_of`` lists the transaction's refunds with their
tags, and ``edge.providers.refunding.carry_out`` makes one adjustment however many attempts
lose their answer (dropped, 5xx, too late), adopting the one an earlier attempt made, pending
Paddle's review or not. Against the simulator, over HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from edge.errors import ProviderError
from edge.providers import refunding
from edge.providers.base import (
    REFUND_FAILED,
    REFUND_PENDING,
    REFUND_SUCCEEDED,
    CheckoutRequest,
    FollowUp,
    FollowUpRequest,
    RefundAlreadyPending,
)
from edge.providers.paddle import PADDLE
from edge.providers.paddle.adjustments import MAX_REASON
from edge.sim.faults import LOSSES, LOST_LATE
from edge.sim.paddle import PaddleSimulator

TX = "tx_01JD0000000000000000000005"
RF = "rf_01JD00000000000000000000A1"
KEY = "pdl_sdbx_apikey_refunds"
NOW_MS = 1_790_000_000_000


def credentials(base: str) -> dict[str, str]:
    return {"apiKey": KEY, "clientToken": "test_0123456789abcdef", "apiBase": base}


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    # an answer held back (LOST_LATE) is given up on after a second, as the node gives up
    async with httpx.AsyncClient(timeout=1.0) as client:
        yield client


async def paid(sim: PaddleSimulator, http: httpx.AsyncClient, amount: int = 1000) -> dict[str, Any]:
    """A checkout the node made and the buyer paid: the node's transaction record."""
    tx = {"id": TX, "kind": "payment", "amount": amount, "currency": "EUR", "isTest": True}
    made = await PADDLE.create_checkout(
        CheckoutRequest(tx, {"name": "A book"}, credentials(sim.url), "", "", http)
    )
    await sim.pay(str(made.provider_ref))
    return {**tx, "providerRef": made.provider_ref}


def refund_request(
    sim: PaddleSimulator,
    http: httpx.AsyncClient,
    tx: dict[str, Any],
    amount: int,
    *,
    refund_id: str = RF,
    whole: bool = False,
    reason: str | None = "Damaged in transit",
    attempts: int = 0,
) -> FollowUpRequest:
    params = {"refundId": refund_id, "amount": amount, "reason": reason, "whole": whole}
    return FollowUpRequest(
        FollowUp("refund", params), tx, credentials(sim.url), http, attempts, NOW_MS
    )


def refunds_made(sim: PaddleSimulator, txn: str) -> list[dict[str, Any]]:
    return [a for a in sim.adjustments_of(txn) if a["action"] == "refund"]


async def test_a_partial_refund_is_an_adjustment_of_the_line_tagged_with_the_refund_id(
    paddle, http
):
    tx = await paid(paddle, http)
    assert PADDLE.send_refund is not None and PADDLE.refund_key_s is None
    refund = await PADDLE.send_refund(refund_request(paddle, http, tx, 300))
    (made,) = refunds_made(paddle, tx["providerRef"])
    assert (made["type"], made["status"], made["items"][0]["amount"]) == (
        "partial",
        "pending_approval",
        "300",
    )
    assert made["reason"] == f"Damaged in transit [{RF}]"
    assert (refund.id, refund.amount_minor, refund.state, refund.tag) == (
        made["id"],
        300,
        REFUND_PENDING,  # Paddle reviews it
        RF,
    )
    assert refund.created_ms is not None and "approval" in refund.detail


async def test_all_of_it_is_a_full_refund(paddle, http):
    tx = await paid(paddle, http)
    refund = await PADDLE.send_refund(refund_request(paddle, http, tx, 1000, whole=True))
    (made,) = refunds_made(paddle, tx["providerRef"])
    assert made["type"] == "full" and refund.amount_minor == 1000


async def test_a_long_reason_keeps_its_tag_whole(paddle, http):
    tx = await paid(paddle, http)
    await PADDLE.send_refund(refund_request(paddle, http, tx, 100, reason="x" * 2000))
    (made,) = refunds_made(paddle, tx["providerRef"])
    assert len(made["reason"]) == MAX_REASON and made["reason"].endswith(f" [{RF}]")


async def test_a_refund_without_a_reason_says_who_asked(paddle, http):
    tx = await paid(paddle, http)
    await PADDLE.send_refund(refund_request(paddle, http, tx, 100, reason=None))
    (made,) = refunds_made(paddle, tx["providerRef"])
    assert made["reason"] == f"Refund requested by the merchant [{RF}]"


async def test_paddle_refusing_while_a_refund_waits_is_already_pending(paddle, http):
    """developer.paddle.com/errors/adjustments/adjustment_pending_refund_request (400): "You
    are unable to create further adjustments against this transaction as there is a pending
    refund request"."""
    tx = await paid(paddle, http)
    await paddle.refund(tx["providerRef"], 100, approve=False)  # in Paddle's dashboard
    with pytest.raises(RefundAlreadyPending):
        await PADDLE.send_refund(refund_request(paddle, http, tx, 300))
    assert len(refunds_made(paddle, tx["providerRef"])) == 1


async def test_other_refusals_are_provider_errors_without_the_key(paddle, http):
    tx = await paid(paddle, http)
    with pytest.raises(ProviderError) as refused:
        await PADDLE.send_refund(refund_request(paddle, http, tx, 5000))  # more than paid
    assert not refused.value.retryable and "adjustment_transaction_item_invalid" in str(
        refused.value.message
    )
    assert KEY not in refused.value.message
    paddle.rate_limit(retry_after_s=7)
    with pytest.raises(ProviderError) as limited:
        await PADDLE.send_refund(refund_request(paddle, http, tx, 100))
    assert limited.value.retryable and limited.value.headers["Retry-After"] == "7"
    assert refunds_made(paddle, tx["providerRef"]) == []


async def test_refunds_of_lists_every_refund_with_its_state_and_tag(paddle, http):
    tx = await paid(paddle, http, amount=10_000)
    txn = tx["providerRef"]
    mine = await PADDLE.send_refund(refund_request(paddle, http, tx, 300))
    await paddle.approve_refund(mine.id)
    rejected = await paddle.refund(txn, 200, approve=False)
    await paddle.reject_refund(rejected)
    # more than one page (Paddle's pages of adjustments hold at most 50)
    for _ in range(55):
        await paddle.refund(txn, 1)
    await paddle.chargeback(txn, 100)  # not a refund
    assert PADDLE.refunds_of is not None
    listed = await PADDLE.refunds_of(refund_request(paddle, http, tx, 1))
    assert len(listed) == 57
    by_id = {r.id: r for r in listed}
    assert (by_id[mine.id].state, by_id[mine.id].tag) == (REFUND_SUCCEEDED, RF)
    assert (by_id[rejected].state, by_id[rejected].tag) == (REFUND_FAILED, None)
    assert sum(r.amount_minor or 0 for r in listed) == 300 + 200 + 55


@pytest.mark.parametrize("how", LOSSES)
async def test_a_refund_whose_answers_are_lost_is_made_once(paddle, http, how):
    tx = await paid(paddle, http)
    txn = tx["providerRef"]
    paddle.faults.lose("POST", r"/adjustments", how)
    with pytest.raises(ProviderError) as lost:
        await refunding.carry_out(PADDLE, refund_request(paddle, http, tx, 300), NOW_MS)
    assert lost.value.retryable and paddle.faults.lost == 1
    # the follow-up queue tries again: the adjustment is found, not made twice
    again = await refunding.carry_out(
        PADDLE, refund_request(paddle, http, tx, 300, attempts=1), NOW_MS
    )
    (made,) = refunds_made(paddle, txn)
    assert again.refund is not None and again.refund.id == made["id"]
    assert again.refund.state == REFUND_PENDING  # kept for Paddle's review: adopted, not failed
    assert "found the refund an earlier attempt made" in again.detail
    if how != LOST_LATE:  # a late answer keeps its connection; the others are over
        third = await refunding.carry_out(
            PADDLE, refund_request(paddle, http, tx, 300, attempts=2), NOW_MS
        )
        assert third.refund == again.refund and len(refunds_made(paddle, txn)) == 1


async def test_every_attempt_asks_first_and_adopts_once_approved(paddle, http):
    tx = await paid(paddle, http)
    first = await refunding.carry_out(PADDLE, refund_request(paddle, http, tx, 300), NOW_MS)
    assert first.refund is not None and "took refund" in first.detail
    await paddle.approve_refund(first.refund.id)
    # a crash after the call left no trace of the answer: the next attempt finds it approved
    again = await refunding.carry_out(PADDLE, refund_request(paddle, http, tx, 300), NOW_MS)
    assert again.refund is not None and again.refund.id == first.refund.id
    assert again.refund.state == REFUND_SUCCEEDED
    assert len(refunds_made(paddle, tx["providerRef"])) == 1


async def test_another_refund_waiting_for_review_holds_the_node_s_back(paddle, http):
    tx = await paid(paddle, http)
    other = await paddle.refund(tx["providerRef"], 100, approve=False)  # not the node's
    with pytest.raises(ProviderError) as held:
        await refunding.carry_out(PADDLE, refund_request(paddle, http, tx, 300), NOW_MS)
    assert held.value.retryable and "another refund" in held.value.message
    assert [a["id"] for a in refunds_made(paddle, tx["providerRef"])] == [other]
    await paddle.approve_refund(other)
    made = await refunding.carry_out(
        PADDLE, refund_request(paddle, http, tx, 300, attempts=1), NOW_MS
    )
    assert made.refund is not None and made.refund.tag == RF
    assert len(refunds_made(paddle, tx["providerRef"])) == 2
