"""PayPal refunds made once (CONTRACT 4.3a), against the simulator: the refund call carries the
node's refund id as its ``PayPal-Request-Id`` and as ``custom_id``, with the reason as
``note_to_payer``; a lost answer, however it is lost, never makes a second refund, nor does a
retry while PayPal still makes the first (409, asked again); the refunds PayPal holds are found
again by their tag; PayPal's rule for the reason is checked before any call."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from support.asgi import serving
from support.waits import until

from edge.errors import ProviderError
from edge.providers import refunding
from edge.providers.base import (
    REFUND,
    REFUND_FAILED,
    REFUND_PENDING,
    REFUND_SUCCEEDED,
    CheckoutRequest,
    FollowUp,
    FollowUpRequest,
)
from edge.providers.paypal import PAYPAL
from edge.sim.faults import LOST_5XX, LOST_DROPPED, LOST_LATE
from edge.sim.paypal import PayPalSimulator

TX = "tx_01JD0000000000000000000003"
RF = "rf_01JD0000000000000000000001"
DAY_MS = 86_400_000
REFUND_PATH = r"/v2/payments/captures/[A-Z0-9]+/refund"
send_refund, refunds_of = PAYPAL.send_refund, PAYPAL.refunds_of
assert send_refund is not None and refunds_of is not None


def credentials(sim: PayPalSimulator) -> dict[str, Any]:
    return {"clientId": "refunds", "clientSecret": "secret", "webhookId": "W", "apiBase": sim.url}


async def paid(sim: PayPalSimulator, http: httpx.AsyncClient) -> tuple[dict[str, Any], str]:
    """A transaction of 19.99 EUR whose order the node made, approved and captured; and the
    capture's id."""
    tx: dict[str, Any] = {
        "id": TX,
        "kind": "payment",
        "amount": 1999,
        "currency": "EUR",
        "isTest": True,
        "createdAt": 1_790_000_000_000,
        "metadata": {},
    }
    started = await PAYPAL.create_checkout(
        CheckoutRequest(
            tx, {"name": "A book"}, credentials(sim), "https://s/t", "https://s/c", http
        )
    )
    tx["providerRef"] = started.provider_ref
    await http.post(
        f"{sim.url}/checkoutnow", data={"token": tx["providerRef"], "action": "approve"}
    )
    captured = await PAYPAL.follow_up(
        FollowUpRequest(
            FollowUp("capture", {"orderId": tx["providerRef"]}), tx, credentials(sim), http
        )
    )
    assert captured.done
    return tx, sim.order(tx["providerRef"])["purchase_units"][0]["payments"]["captures"][0]["id"]


def refund_request(
    sim: PayPalSimulator,
    http: httpx.AsyncClient,
    tx: dict[str, Any],
    amount: int = 500,
    reason: str | None = "Returned",
    refund_id: str = RF,
    attempts: int = 0,
    created_ms: int = 0,
) -> FollowUpRequest:
    params = {"refundId": refund_id, "amount": amount, "reason": reason, "whole": False}
    return FollowUpRequest(
        FollowUp(REFUND, params), tx, credentials(sim), http, attempts, created_ms
    )


async def test_a_refund_carries_the_refund_id_as_its_key_and_its_tag(paypal):
    async with httpx.AsyncClient() as http:
        tx, capture = await paid(paypal, http)
        made = await send_refund(refund_request(paypal, http, tx))
    assert (made.amount_minor, made.state, made.tag) == (500, REFUND_SUCCEEDED, RF)
    assert made.created_ms is not None and made.detail == ""
    kept = paypal.refund(made.id)
    assert (kept["custom_id"], kept["note_to_payer"]) == (RF, "Returned")
    assert kept["amount"] == {"currency_code": "EUR", "value": "5.00"}
    assert [r["id"] for r in paypal.refunds_made(capture)] == [made.id]


async def test_a_refund_without_a_reason_has_no_note(paypal):
    async with httpx.AsyncClient() as http:
        tx, _ = await paid(paypal, http)
        made = await send_refund(refund_request(paypal, http, tx, reason=None))
    assert "note_to_payer" not in paypal.refund(made.id)


@pytest.mark.parametrize("lost", [LOST_DROPPED, LOST_5XX, LOST_LATE])
async def test_a_lost_answer_never_makes_a_second_refund(paypal, lost):
    """The first attempt acts at PayPal and its answer is lost; the next carries the same key
    and gets the same refund back (``carry_out`` as the follow-up queue runs it)."""
    async with httpx.AsyncClient(timeout=0.5 if lost == LOST_LATE else 5.0) as http:
        tx, capture = await paid(paypal, http)
        paypal.faults.lose("POST", REFUND_PATH, lost)
        with pytest.raises(ProviderError) as first:
            await refunding.carry_out(PAYPAL, refund_request(paypal, http, tx), now_ms=DAY_MS)
        assert first.value.retryable
        again = await refunding.carry_out(
            PAYPAL, refund_request(paypal, http, tx, attempts=1), now_ms=DAY_MS
        )
    assert paypal.faults.lost == 1
    (made,) = paypal.refunds_made(capture)
    assert again.refund is not None and (again.refund.id, again.refund.tag) == (made["id"], RF)
    assert again.detail.startswith(f"PayPal took refund {made['id']}")


async def test_an_attempt_after_paypal_may_forget_the_key_adopts_the_refund_it_finds(paypal):
    """PayPal keeps a refund's PayPal-Request-Id 45 days: an attempt that late asks first and
    adopts the refund tagged with the node's refund id, sending nothing."""
    assert PAYPAL.refund_key_s == 45 * 24 * 3600
    async with httpx.AsyncClient() as http:
        tx, capture = await paid(paypal, http)
        paypal.faults.lose("POST", REFUND_PATH, LOST_DROPPED)
        with pytest.raises(ProviderError):
            await refunding.carry_out(PAYPAL, refund_request(paypal, http, tx), now_ms=0)
        late = refund_request(paypal, http, tx, attempts=3, created_ms=0)
        adopted = await refunding.carry_out(PAYPAL, late, now_ms=45 * DAY_MS)
    (made,) = paypal.refunds_made(capture)
    assert adopted.refund is not None and adopted.refund.id == made["id"]
    assert "found the refund an earlier attempt made" in adopted.detail


async def test_the_refunds_paypal_holds_are_found_by_their_tag(paypal):
    """The order shows its refunds without their ``custom_id`` (the simulator shows the least
    PayPal may copy there), so each is read in full; one made in PayPal's dashboard carries no
    node tag."""
    async with httpx.AsyncClient() as http:
        tx, capture = await paid(paypal, http)
        ours = await send_refund(refund_request(paypal, http, tx))
        token = (
            await http.post(
                f"{paypal.url}/v1/oauth2/token",
                auth=("refunds", "secret"),
                data={"grant_type": "client_credentials"},
            )
        ).json()["access_token"]
        theirs = await http.post(
            f"{paypal.url}/v2/payments/captures/{capture}/refund",
            json={"amount": {"currency_code": "EUR", "value": "1.00"}},
            headers={"Authorization": f"Bearer {token}"},
        )
        assert (
            "custom_id"
            not in paypal.order(tx["providerRef"])["purchase_units"][0]["payments"]["refunds"][0]
        )
        found = await refunds_of(refund_request(paypal, http, tx))
    assert [(r.id, r.tag, r.amount_minor) for r in found] == [
        (ours.id, RF, 500),
        (theirs.json()["id"], TX, 100),  # a refund made without one shows the capture's
    ]
    assert refunding.adopted(found, RF) == found[0]


async def test_a_pending_refund_is_pending_until_paypal_settles_it(paypal):
    async with httpx.AsyncClient() as http:
        tx, capture = await paid(paypal, http)
        paypal.set_refund_outcome(capture, "PENDING")
        made = await send_refund(refund_request(paypal, http, tx))
        assert (made.state, made.detail) == (REFUND_PENDING, "ECHECK")
        await paypal.settle_refund(made.id, "FAILED")
        (seen,) = await refunds_of(refund_request(paypal, http, tx))
    assert (seen.id, seen.state, seen.tag) == (made.id, REFUND_FAILED, RF)


async def test_paypal_refusing_the_note_is_a_refusal_for_good(paypal):
    async with httpx.AsyncClient() as http:
        tx, capture = await paid(paypal, http)
        with pytest.raises(ProviderError) as refused:
            await send_refund(refund_request(paypal, http, tx, reason="two\nlines"))
    assert not refused.value.retryable
    assert "INVALID_REQUEST; INVALID_PARAMETER_SYNTAX" in refused.value.message
    assert paypal.refunds_made(capture) == []


async def test_a_rate_limit_is_retried_after_the_time_paypal_gives(paypal):
    async with httpx.AsyncClient() as http:
        tx, capture = await paid(paypal, http)
        paypal.rate_limit(path=REFUND_PATH, retry_after_s=30)
        with pytest.raises(ProviderError) as limited:
            await send_refund(refund_request(paypal, http, tx))
        assert limited.value.retryable and limited.value.headers["Retry-After"] == "30"
        assert "RATE_LIMIT_REACHED" in limited.value.message
        made = await send_refund(refund_request(paypal, http, tx))
    assert [r["id"] for r in paypal.refunds_made(capture)] == [made.id]


async def test_a_retry_while_paypal_still_makes_the_first_refund_is_asked_again(paypal):
    """The first attempt gives up on a slow PayPal; the next, with the same PayPal-Request-Id
    while PayPal still makes the first refund, is answered 409 ``PREVIOUS_REQUEST_IN_PROGRESS``:
    tried again, never settled; the one after gets the first attempt's refund."""
    async with httpx.AsyncClient() as http:
        tx, capture = await paid(paypal, http)
        paypal.pause_refunds()
        async with httpx.AsyncClient(timeout=0.5) as impatient:
            with pytest.raises(ProviderError) as slow:
                await refunding.carry_out(
                    PAYPAL, refund_request(paypal, impatient, tx), now_ms=DAY_MS
                )
        assert slow.value.retryable and RF in paypal.in_progress("refunds")
        with pytest.raises(ProviderError) as busy:
            await refunding.carry_out(
                PAYPAL, refund_request(paypal, http, tx, attempts=1), now_ms=DAY_MS
            )
        assert busy.value.retryable and "PREVIOUS_REQUEST_IN_PROGRESS" in busy.value.message
        assert paypal.refunds_made(capture) == []
        paypal.resume_refunds()
        await until(lambda: not paypal.in_progress("refunds"), what="the first call ends")
        done = await refunding.carry_out(
            PAYPAL, refund_request(paypal, http, tx, attempts=2), now_ms=DAY_MS
        )
    (made,) = paypal.refunds_made(capture)
    assert done.refund is not None and (done.refund.id, done.refund.tag) == (made["id"], RF)


async def test_a_refund_call_still_in_progress_is_asked_again_not_settled():
    """PayPal answers 409 ``PREVIOUS_REQUEST_IN_PROGRESS`` to a second call with the same
    ``PayPal-Request-Id`` while the first runs (payments_payment_v2.json, the refund's 409): the
    first may yet succeed, so the refund is retried, never settled as refused."""

    async def paypal(scope: dict[str, Any], body: bytes) -> tuple[int, bytes]:
        if scope["path"] == "/v1/oauth2/token":
            return 200, json.dumps({"access_token": "A21", "expires_in": 3600}).encode()
        if scope["method"] == "GET":
            capture = {"id": "CAPTURE1", "status": "COMPLETED"}
            unit = {"payments": {"captures": [capture]}}
            return 200, json.dumps({"id": "ORDER1", "purchase_units": [unit]}).encode()
        detail = {"issue": "PREVIOUS_REQUEST_IN_PROGRESS", "description": "In progress."}
        conflict = {"name": "RESOURCE_CONFLICT", "message": "Conflict.", "details": [detail]}
        return 409, json.dumps(conflict).encode()

    tx = {"id": TX, "currency": "EUR", "isTest": True, "providerRef": "ORDER1"}
    async with serving(paypal) as url, httpx.AsyncClient() as http:
        request = FollowUpRequest(
            FollowUp(REFUND, {"refundId": RF, "amount": 500, "reason": None, "whole": False}),
            tx,
            {"clientId": "c409", "clientSecret": "s", "webhookId": "W", "apiBase": url},
            http,
        )
        with pytest.raises(ProviderError) as busy:
            await send_refund(request)
    assert busy.value.retryable and "PREVIOUS_REQUEST_IN_PROGRESS" in busy.value.message


@pytest.mark.parametrize("breaking", ["\n", "\r", "\x85", "\u2028", "\u2029"])
def test_a_reason_must_be_one_line(breaking):
    problem = PAYPAL.refund_reason_problem(f"Sorry{breaking}again")
    assert problem is not None and "shows the reason to the buyer" in problem
    assert "one line" in problem


def test_a_reason_is_at_most_255_characters_as_paypal_may_count_them():
    assert PAYPAL.refund_reason_problem("x" * 255) is None
    assert PAYPAL.refund_reason_problem("") is None  # no note at all
    too_long = PAYPAL.refund_reason_problem("x" * 256)
    assert too_long is not None and "at most 255 characters" in too_long
    # one character outside the BMP is two UTF-16 units: the stricter count decides
    assert PAYPAL.refund_reason_problem("x" * 254 + "\U0001f600") is not None
    assert PAYPAL.refund_reason_problem("é" * 255) is None
