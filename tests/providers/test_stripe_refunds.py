"""A Stripe refund exactly once (edge.providers.stripe.refunds, driven by
edge.providers.refunding.carry_out), against the simulator over HTTP, whatever answer is lost:
dropped half-way, a gateway's 5xx, or an answer later than the caller waits; a retry while
Stripe still runs the first attempt (409, asked again); and an attempt made after Stripe forgot
the idempotency key, which finds the refund by its tag."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from support.waits import bound, until

from edge.errors import ProviderError
from edge.providers.base import (
    REFUND_SUCCEEDED,
    CheckoutRequest,
    FollowUp,
    FollowUpRequest,
)
from edge.providers.refunding import ASK_AFTER, OutcomeUnknown, carry_out
from edge.providers.stripe import STRIPE
from edge.providers.stripe.refunds import REFUND_KEY_S
from edge.sim.faults import LOST_5XX, LOST_DROPPED, LOST_LATE
from edge.sim.stripe import StripeSimulator

SECRET_KEY = "sk_test_refunds_0123456789"
TX = "tx_01JD0000000000000000000007"
REFUND_ID = "rf_01JD0000000000000000000007"
OTHER_ID = "rf_01JD0000000000000000000008"
HOUR_MS = 3_600_000


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=bound(10.0)) as client:
        yield client


async def paid_session(sim: StripeSimulator, http: httpx.AsyncClient) -> str:
    """A Checkout Session of 19.99 EUR made as the adapter makes it, then paid."""
    session_id = await open_session(sim, http)
    await sim.complete(session_id)
    return session_id


async def open_session(sim: StripeSimulator, http: httpx.AsyncClient) -> str:
    made = await STRIPE.create_checkout(
        CheckoutRequest(
            tx={"id": TX, "kind": "payment", "amount": 1999, "currency": "EUR", "metadata": {}},
            product={"name": "Pro"},
            credentials=credentials(sim),
            success_url="https://shop.example/thanks",
            cancel_url="https://shop.example/cart",
            http=http,
        )
    )
    assert made.provider_ref is not None
    return made.provider_ref


def credentials(sim: StripeSimulator) -> dict[str, Any]:
    return {"secretKey": SECRET_KEY, "apiBase": sim.url}


def asked(
    sim: StripeSimulator,
    http: httpx.AsyncClient,
    session_id: str,
    *,
    attempts: int = 0,
    age_ms: int = 0,
    amount: int = 500,
    refund_id: str = REFUND_ID,
) -> FollowUpRequest:
    """The node's refund follow-up: its ``attempts`` so far, first owed ``age_ms`` ago."""
    return FollowUpRequest(
        follow_up=FollowUp(
            "refund", {"refundId": refund_id, "amount": amount, "reason": None, "whole": False}
        ),
        tx={"id": TX, "providerRef": session_id, "currency": "EUR", "kind": "payment"},
        credentials=credentials(sim),
        http=http,
        attempts=attempts,
        created_ms=now_ms() - age_ms,
    )


def now_ms() -> int:
    return int(time.time() * 1000)


def test_the_key_is_kept_as_long_as_stripe_documents() -> None:
    """docs.stripe.com/api/idempotent_requests: keys are removed "after they're at least 24
    hours old"."""
    assert STRIPE.refund_key_s == REFUND_KEY_S == 24 * 3600


async def test_a_refund_is_made_and_tagged(sim: StripeSimulator, http: httpx.AsyncClient) -> None:
    session_id = await paid_session(sim, http)
    result = await carry_out(STRIPE, asked(sim, http, session_id), now_ms())
    (made,) = sim.refunds_of(session_id)
    assert result.refund is not None and result.refund.id == made["id"]
    assert (result.refund.amount_minor, result.refund.state) == (500, REFUND_SUCCEEDED)
    assert result.refund.tag == REFUND_ID and made["metadata"]["txId"] == TX
    assert result.detail.startswith("Stripe took refund re_")
    assert result.refund.created_ms == made["created"] * 1000


@pytest.mark.parametrize("how", [LOST_DROPPED, LOST_5XX, LOST_LATE])
async def test_a_lost_answer_and_its_retries_are_one_refund(
    sim: StripeSimulator, http: httpx.AsyncClient, how: str
) -> None:
    session_id = await paid_session(sim, http)
    sim.faults.lose("POST", r"/v1/refunds", how)
    # a late answer comes after the caller gave up: a short timeout stands for the node's
    async with httpx.AsyncClient(timeout=0.5) as impatient:
        with pytest.raises(ProviderError) as lost:
            await carry_out(STRIPE, asked(sim, impatient, session_id), now_ms())
    assert lost.value.retryable and sim.faults.lost == 1
    assert len(sim.refunds_of(session_id)) == 1  # Stripe made it: only its answer was lost
    results = [
        await carry_out(STRIPE, asked(sim, http, session_id, attempts=n), now_ms())
        for n in (1, 2, 3)
    ]
    (made,) = sim.refunds_of(session_id)
    assert {r.refund.id for r in results if r.refund} == {made["id"]}


async def test_after_stripe_forgot_the_key_the_refund_is_found_by_its_tag(
    sim: StripeSimulator, http: httpx.AsyncClient
) -> None:
    session_id = await paid_session(sim, http)
    sim.faults.lose("POST", r"/v1/refunds", LOST_DROPPED)
    with pytest.raises(ProviderError):
        await carry_out(STRIPE, asked(sim, http, session_id), now_ms())
    sim.forget_idempotency_keys()  # 24 hours on
    late = asked(sim, http, session_id, attempts=5, age_ms=25 * HOUR_MS)
    result = await carry_out(STRIPE, late, now_ms())
    (made,) = sim.refunds_of(session_id)
    assert result.refund is not None and result.refund.id == made["id"]
    assert result.detail.startswith("Stripe found the refund an earlier attempt made")


async def test_a_first_attempt_after_stripe_forgot_the_key_asks_first(
    sim: StripeSimulator, http: httpx.AsyncClient
) -> None:
    """An attempt the node made and never recorded (it crashed while Stripe answered: the queue
    still counts no attempt), taken up after a day down: Stripe's list finds the refund."""
    session_id = await paid_session(sim, http)
    await carry_out(STRIPE, asked(sim, http, session_id), now_ms())
    sim.forget_idempotency_keys()  # the node comes back 25 hours on
    again = await carry_out(STRIPE, asked(sim, http, session_id, age_ms=25 * HOUR_MS), now_ms())
    (made,) = sim.refunds_of(session_id)
    assert again.refund is not None and again.refund.id == made["id"]


async def test_a_refusal_after_a_lost_answer_adopts_the_refund_stripe_lists(
    sim: StripeSimulator, http: httpx.AsyncClient
) -> None:
    """Stripe made the refund and its answer was lost; the next attempt is refused for good
    before it reaches the refund call (here, a refusal of its own): the list finds the refund,
    which is adopted, never freed as failed."""
    session_id = await paid_session(sim, http)
    sim.faults.lose("POST", r"/v1/refunds", LOST_5XX)
    with pytest.raises(ProviderError):
        await carry_out(STRIPE, asked(sim, http, session_id), now_ms())

    async def refused(request: FollowUpRequest) -> Any:
        raise ProviderError("provider_error", "No such checkout session", retryable=False)

    refusing = dataclasses.replace(STRIPE, send_refund=refused)
    result = await carry_out(refusing, asked(sim, http, session_id, attempts=1), now_ms())
    (made,) = sim.refunds_of(session_id)
    assert result.refund is not None and result.refund.id == made["id"]
    # with nothing of the node's in the list, the refusal stands
    with pytest.raises(ProviderError) as stands:
        await carry_out(
            refusing, asked(sim, http, session_id, attempts=1, refund_id=OTHER_ID), now_ms()
        )
    assert not stands.value.retryable


async def test_a_refusal_after_a_lost_answer_with_the_list_down_a_while_is_tried_again(
    sim: StripeSimulator, http: httpx.AsyncClient
) -> None:
    """The list fails for a passing reason (a 503, a rate limit): nothing is settled, the
    queue asks again later, never an amount held for good on a passing fault."""
    session_id = await paid_session(sim, http)

    async def refused(request: FollowUpRequest) -> Any:
        raise ProviderError("provider_error", "No such checkout session", retryable=False)

    async def down(request: FollowUpRequest) -> Any:
        raise ProviderError("provider_error", "Stripe answered 503", retryable=True)

    flaky = dataclasses.replace(STRIPE, send_refund=refused, refunds_of=down)
    with pytest.raises(ProviderError) as later:
        await carry_out(flaky, asked(sim, http, session_id, attempts=1), now_ms())
    assert later.value.retryable


async def test_a_refusal_after_a_lost_answer_with_the_list_unread_is_unknown(
    sim: StripeSimulator, http: httpx.AsyncClient
) -> None:
    """The merchant rotated the key after a lost answer: the retry and the list are both
    refused, so nobody can say whether the refund was made (its amount must stay held)."""
    session_id = await paid_session(sim, http)
    sim.faults.lose("POST", r"/v1/refunds", LOST_5XX)
    with pytest.raises(ProviderError):
        await carry_out(STRIPE, asked(sim, http, session_id), now_ms())
    sim.refused_keys.add(SECRET_KEY)
    with pytest.raises(OutcomeUnknown, match="could not be read"):
        await carry_out(STRIPE, asked(sim, http, session_id, attempts=1), now_ms())
    # a first attempt refused for good made nothing: its refusal is final
    with pytest.raises(ProviderError) as first:
        await carry_out(STRIPE, asked(sim, http, session_id, refund_id=OTHER_ID), now_ms())
    assert not first.value.retryable


async def test_without_asking_a_forgotten_key_would_refund_twice(
    sim: StripeSimulator, http: httpx.AsyncClient
) -> None:
    """The control: why an attempt after the key's life must ask first."""
    session_id = await paid_session(sim, http)
    assert STRIPE.send_refund is not None
    await STRIPE.send_refund(asked(sim, http, session_id))
    sim.forget_idempotency_keys()
    await STRIPE.send_refund(asked(sim, http, session_id))
    assert len(sim.refunds_of(session_id)) == 2


async def test_a_refund_made_in_the_dashboard_is_not_adopted(
    sim: StripeSimulator, http: httpx.AsyncClient
) -> None:
    """A refund made in Stripe's dashboard carries no tag: a late attempt makes its own."""
    session_id = await paid_session(sim, http)
    await sim.refund(session_id, 500)
    late = asked(sim, http, session_id, attempts=2, age_ms=25 * HOUR_MS)
    result = await carry_out(STRIPE, late, now_ms())
    assert result.refund is not None and result.refund.tag == REFUND_ID
    assert len(sim.refunds_of(session_id)) == 2


async def test_the_refunds_of_a_payment_are_read_to_the_last_page(
    sim: StripeSimulator, http: httpx.AsyncClient
) -> None:
    session_id = await paid_session(sim, http)
    for n in range(103):  # more than one page of 100
        await sim.refund(session_id, 10 + n % 2)
    assert STRIPE.refunds_of is not None
    listed = await STRIPE.refunds_of(asked(sim, http, session_id))
    assert [r.id for r in listed] == [r["id"] for r in sim.refunds_of(session_id)]
    assert len(listed) == 103


async def test_a_refund_stripe_refuses_is_final_and_a_rate_limit_is_not(
    sim: StripeSimulator, http: httpx.AsyncClient
) -> None:
    session_id = await paid_session(sim, http)
    with pytest.raises(ProviderError) as refused:
        await carry_out(STRIPE, asked(sim, http, session_id, amount=5000), now_ms())
    assert not refused.value.retryable and "greater than unrefunded" in refused.value.message
    sim.rate_limit_next(1)
    with pytest.raises(ProviderError) as limited:
        await carry_out(STRIPE, asked(sim, http, session_id, refund_id="rf_2"), now_ms())
    assert limited.value.retryable and "Retry-After" not in limited.value.headers
    sim.rate_limit_next(1, retry_after_s=7)
    with pytest.raises(ProviderError) as told:
        await carry_out(STRIPE, asked(sim, http, session_id, refund_id="rf_2"), now_ms())
    assert told.value.headers["Retry-After"] == "7"
    made = await carry_out(STRIPE, asked(sim, http, session_id, refund_id="rf_2"), now_ms())
    assert made.refund is not None and len(sim.refunds_of(session_id)) == 1


async def test_a_retry_while_stripe_still_runs_the_first_attempt_is_asked_again(
    sim: StripeSimulator, http: httpx.AsyncClient
) -> None:
    """The first attempt gives up on a slow Stripe; the next, with the same key while Stripe
    still runs the first, is answered 409 ``idempotency_key_in_use``: tried again, never
    refused for good; the one after gets the first attempt's refund."""
    session_id = await paid_session(sim, http)
    sim.pause_runs()
    async with httpx.AsyncClient(timeout=0.5) as impatient:
        with pytest.raises(ProviderError) as slow:
            await carry_out(STRIPE, asked(sim, impatient, session_id), now_ms())
    assert slow.value.retryable and REFUND_ID in sim.in_progress(SECRET_KEY)
    with pytest.raises(ProviderError) as busy:
        await carry_out(STRIPE, asked(sim, http, session_id, attempts=1), now_ms())
    assert busy.value.retryable and "409" in busy.value.message
    assert sim.refunds_of(session_id) == []
    sim.resume_runs()
    await until(lambda: not sim.in_progress(SECRET_KEY), what="the first attempt's run ends")
    done = await carry_out(STRIPE, asked(sim, http, session_id, attempts=2), now_ms())
    (made,) = sim.refunds_of(session_id)
    assert done.refund is not None and (done.refund.id, done.refund.tag) == (made["id"], REFUND_ID)


async def test_a_checkout_not_paid_has_no_refunds_and_cannot_be_refunded(
    sim: StripeSimulator, http: httpx.AsyncClient
) -> None:
    session_id = await open_session(sim, http)
    assert STRIPE.refunds_of is not None
    assert await STRIPE.refunds_of(asked(sim, http, session_id)) == ()
    with pytest.raises(ProviderError) as refused:
        await carry_out(STRIPE, asked(sim, http, session_id), now_ms())
    assert not refused.value.retryable


async def test_a_500_stripe_saved_under_the_key_is_seen_past_by_asking(
    sim: StripeSimulator, http: httpx.AsyncClient
) -> None:
    """Stripe made the refund and then failed inside its API: the 500 is saved under the key,
    so every retry gets it again (docs.stripe.com/api/idempotent_requests). After ``ASK_AFTER``
    attempts the node asks Stripe's list first and adopts the refund tagged with its id, never
    ending unknown while the refund sits there."""
    session_id = await paid_session(sim, http)
    sim.fail_next_runs(1, acted=True)
    for n in range(ASK_AFTER):
        with pytest.raises(ProviderError) as replayed:
            await carry_out(STRIPE, asked(sim, http, session_id, attempts=n), now_ms())
        assert replayed.value.retryable
    result = await carry_out(STRIPE, asked(sim, http, session_id, attempts=ASK_AFTER), now_ms())
    (made,) = sim.refunds_of(session_id)
    assert result.refund is not None and result.refund.id == made["id"]
