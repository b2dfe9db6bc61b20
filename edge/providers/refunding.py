"""A refund, exactly once at its provider (CONTRACT 4.3a), whatever answers are lost.

A refund call can act at the provider and lose its answer: the answer comes after the node's
timeout, the connection drops, a gateway answers 5xx, the node is killed during the call. The
follow-up queue then calls again, and a provider that cannot tell the second call from a new
refund pays twice. So:

- Where the provider honours an idempotency key on a refund call (Stripe ``Idempotency-Key``,
  PayPal ``PayPal-Request-Id``), every attempt carries the same key: the node's refund id. The
  follow-up queue stops retrying before the provider forgets the key (``refund_key_s``); an
  attempt made so late that the key may be forgotten asks the provider first, as below.
- Where it honours none (Paddle adjustments, BTCPay pull payments), every attempt first asks the
  provider what refunds exist for the payment (``Provider.refunds_of``) and adopts the one that
  carries the node's refund id (each adapter tags what it makes: ``ProviderRefund.tag``). This
  includes a first attempt: one made before a crash left no trace in the queue. A refund made
  in the provider's own dashboard carries no tag and is never adopted.
- A refusal that means "a refund is already pending" (``RefundAlreadyPending``) is asked about
  the same way: the pending one is adopted if it is the node's; if it is not, the attempt is
  tried again later (the outcome is not known, so nothing is freed).
- What the provider lists is also a last check: a refund that would take what it gave back
  (its own dashboard's refunds included) past what was charged is refused for good.
- A refusal for good after an earlier attempt whose answer was lost proves nothing about that
  attempt (the merchant rotated the key, the payment's read is refused): the provider's list
  decides. The node's refund found there is adopted; not there, the refusal stands; the list
  unreadable for a while (a network fault, a 5xx, a rate limit), the attempt is tried again
  later; refused for good, the outcome is unknown (``OutcomeUnknown``): the amount stays held
  and the node asks again, never a refund freed that the provider may have made.

The result names the provider's refund (made, or adopted), which the project actor records on
the transaction's refund: its amount then counts once, through that id.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from edge.errors import ContractError
from edge.providers.base import (
    REFUND_FAILED,
    FollowUpRequest,
    FollowUpResult,
    Provider,
    ProviderRefund,
    RefundAlreadyPending,
)
from edge.providers.calls import provider_error

# An attempt this close to the end of the provider's memory of the idempotency key asks first.
KEY_MARGIN_S = 3600
# An attempt after this many asks first too: a provider that saved a failure of its own under
# the key (Stripe replays a 500 with it) answers every retry with that, whatever it made.
ASK_AFTER = 2


class OutcomeUnknown(Exception):
    """This attempt was refused for good, an earlier one may have made the refund, and the
    provider's list, which would tell, could not be read."""


async def carry_out(provider: Provider, request: FollowUpRequest, now_ms: int) -> FollowUpResult:
    """Make the refund the follow-up asks for, or adopt the one an earlier attempt made."""
    send, look = provider.send_refund, provider.refunds_of
    if send is None or look is None:
        return FollowUpResult(detail=f"{_name(provider)} takes no refunds from the node")
    refund_id = str(request.follow_up.params["refundId"])
    try:
        return await _make(provider, request, now_ms, refund_id, send, look)
    except ContractError as refused:
        if refused.retryable or request.attempts == 0:
            raise
        # an earlier attempt lost its answer: it may have made the refund
        try:
            own = adopted(await look(request), refund_id)
        except ContractError as unread:
            if unread.retryable:
                raise  # a passing fault of the list's: the queue asks again later
            raise OutcomeUnknown(
                f"{refused.code}: {refused.message} (an earlier attempt's answer was lost, and"
                f" {_name(provider)}'s refunds could not be read to tell whether it made the"
                " refund)"
            ) from unread
        if own is None:
            raise
        return _result(provider, own, adopted=True)


async def _make(
    provider: Provider,
    request: FollowUpRequest,
    now_ms: int,
    refund_id: str,
    send: Callable[[FollowUpRequest], Awaitable[ProviderRefund]],
    look: Callable[[FollowUpRequest], Awaitable[tuple[ProviderRefund, ...]]],
) -> FollowUpResult:
    """Ask first where ``must_ask`` says so, then send (a refund already pending is asked
    about)."""
    if must_ask(provider, request, now_ms):
        listed = await look(request)
        own = adopted(listed, refund_id)
        if own is not None:
            return _result(provider, own, adopted=True)
        _never_more_than_paid(provider, request, listed)
    try:
        made = await send(request)
    except RefundAlreadyPending:
        own = adopted(await look(request), refund_id)
        if own is None:
            raise provider_error(
                f"{_name(provider)} holds another refund of this payment for review; the node"
                " asks again later",
                retryable=True,
            ) from None
        return _result(provider, own, adopted=True)
    return _result(provider, made, adopted=False)


def must_ask(provider: Provider, request: FollowUpRequest, now_ms: int) -> bool:
    """Must this attempt ask the provider what exists before it sends? Always where the
    provider honours no idempotency key; else once the key may be forgotten, whatever the
    attempts counted (a node down past the key's life would send it again), and after
    ``ASK_AFTER`` attempts whose answers were lost (one replayed under the key included)."""
    if provider.refund_key_s is None or request.attempts >= ASK_AFTER:
        return True
    age_s = (now_ms - request.created_ms) / 1000
    return age_s >= provider.refund_key_s - KEY_MARGIN_S


def adopted(refunds: tuple[ProviderRefund, ...], refund_id: str) -> ProviderRefund | None:
    """The node's own refund among ``refunds``: the one tagged with its id (an id is made once
    and tagged on one call, so the tag alone names it, whatever amount the provider states)."""
    return next((refund for refund in refunds if refund.tag == refund_id), None)


def _never_more_than_paid(
    provider: Provider, request: FollowUpRequest, listed: tuple[ProviderRefund, ...]
) -> None:
    """Refuse, for good, a refund that would take what the provider already gave back past
    what was charged (``params.charged``). The node checks what is left when the merchant
    asks, from what it knows; a refund made in the provider's own dashboard may not have
    reached the node yet (BTCPay's names only its pull payment), and a provider that caps
    nothing (BTCPay) would pay both."""
    params = request.follow_up.params
    charged = params.get("charged")
    if charged is None:
        return
    given = sum(r.amount_minor or 0 for r in listed if r.state != REFUND_FAILED)
    if given + int(params["amount"]) > int(charged):
        raise provider_error(
            f"{_name(provider)} has given back {given} of the {charged} paid (in minor units),"
            " refunds made in its own dashboard included: this refund would give back more than"
            " was paid",
            retryable=False,
        )


def _result(provider: Provider, refund: ProviderRefund, *, adopted: bool) -> FollowUpResult:
    how = "found the refund an earlier attempt made" if adopted else "took refund"
    said = f"{_name(provider)} {how} {refund.id} ({refund.state})"
    if refund.detail:
        said += f": {refund.detail}"
    return FollowUpResult(detail=said, refund=refund)


def _name(provider: Provider) -> str:
    return provider.display_name or provider.name
