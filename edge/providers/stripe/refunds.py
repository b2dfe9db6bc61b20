"""Refunds at Stripe, exactly once (CONTRACT 4.3a; ``edge.providers.refunding`` drives them).

- ``send_refund``: ``POST /v1/refunds`` on the checkout's payment intent, with
  ``Idempotency-Key`` = the node's refund id (``rf_...``) on every attempt, so an attempt whose
  answer was lost and its retry are one refund: Stripe "saves the resulting status code and
  body of the first request made for any given idempotency key ... Subsequent requests with the
  same key return the same result" (docs.stripe.com/api/idempotent_requests). The refund is
  tagged with that id (``metadata.refundId``) and the transaction's (``metadata.txId``).
- ``refunds_of``: ``GET /v1/refunds?payment_intent=...``, every page (``has_more``,
  ``starting_after``): what an attempt made after Stripe may have forgotten the key reads first,
  to adopt the refund tagged with the node's refund id instead of making a second one.
- ``REFUND_KEY_S``: Stripe removes keys "after they're at least 24 hours old"
  (docs.stripe.com/api/idempotent_requests): the node's retries of one refund end before that.

Amounts are the node's minor units in the answer (``events.read_refund``) and Stripe's in the
request (``money``).
"""

from __future__ import annotations

from typing import Any

from edge.providers import answers, calls
from edge.providers.base import FollowUpRequest, ProviderRefund
from edge.providers.stripe import api, money
from edge.providers.stripe.events import read_refund

REFUND_KEY_S = 24 * 3600
# Stripe's metadata values: "up to 500 characters long" (stripe-python 16.1.0,
# params/_refund_create_params.py, metadata)
MAX_METADATA_VALUE = 500


async def send_refund(request: FollowUpRequest) -> ProviderRefund:
    """Ask Stripe for the refund the follow-up names (params ``refundId``, ``amount`` in the
    node's minor units, ``reason``); the refund as Stripe answered it. ``ProviderError`` as
    every call (``edge.providers.calls``); not retryable when the checkout has no payment to
    refund or the amount has no exact Stripe value."""
    tx, params = request.tx, request.follow_up.params
    intent = await payment_intent_of(request)
    if intent is None:
        raise calls.provider_error("The Stripe checkout has no payment to refund.", retryable=False)
    amount = money.to_stripe(int(params["amount"]), str(tx["currency"]))
    if amount is None:
        raise calls.provider_error(
            f"Stripe cannot refund {params['amount']} minor units of {tx['currency']} exactly.",
            retryable=False,
        )
    answer = await api.post(
        request.http,
        request.credentials,
        "/v1/refunds",
        refund_params(intent, amount, tx["id"], str(params["refundId"]), params.get("reason")),
        idempotency_key=str(params["refundId"]),
    )
    made = read_refund(answer)
    if made is None:
        raise answers.without(api.API, "the refund's id")
    return made


def refund_params(
    intent: str, amount: int, tx_id: str, refund_id: str, reason: Any
) -> dict[str, Any]:
    """``POST /v1/refunds`` parameters (stripe-python 16.1.0 ``RefundCreateParams``). Stripe's
    own ``reason`` is one of three words; the merchant's reason travels in metadata."""
    metadata = {"txId": tx_id, "refundId": refund_id}
    if isinstance(reason, str) and reason:
        metadata["reason"] = reason[:MAX_METADATA_VALUE]
    return {
        "payment_intent": intent,
        "amount": amount,
        "reason": "requested_by_customer",
        "metadata": metadata,
    }


async def refunds_of(request: FollowUpRequest) -> tuple[ProviderRefund, ...]:
    """Every refund Stripe holds for the checkout's payment, newest first (none when the
    checkout has no payment)."""
    intent = await payment_intent_of(request)
    if intent is None:
        return ()
    listed = await api.list_all(
        request.http, request.credentials, "/v1/refunds", {"payment_intent": intent}
    )
    return tuple(refund for o in listed if (refund := read_refund(o)) is not None)


async def payment_intent_of(request: FollowUpRequest) -> str | None:
    """The payment intent of the transaction's Checkout Session (``GET
    /v1/checkout/sessions/{id}``); None while it has none (not paid in payment mode)."""
    session = await api.get(
        request.http, request.credentials, f"/v1/checkout/sessions/{request.tx['providerRef']}"
    )
    intent = session.get("payment_intent")
    intent = intent.get("id") if isinstance(intent, dict) else intent
    return intent if isinstance(intent, str) and intent else None
