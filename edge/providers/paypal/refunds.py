"""Refunds at PayPal, exactly once (CONTRACT 4.3a; ``edge.providers.refunding`` drives them).

- ``send_refund``: ``POST /v2/payments/captures/{id}/refund`` on the order's capture, with
  ``PayPal-Request-Id`` = the node's refund id on every attempt, ``custom_id`` = the same id
  (the tag ``refunds_of`` finds it by), the amount, and ``note_to_payer`` = the reason when
  given (payments_payment_v2.json ``refund_request``). PayPal answers a request id it has seen
  with "the latest status of the previous request that used that same header"
  (https://developer.paypal.com/api/rest/reference/idempotency/) and keeps it for 45 days
  ("The server stores keys for 45 days.", payments_payment_v2.json
  ``components.parameters.paypal_request_id``, the ``PayPal-Request-Id`` of the refund call in
  the Payments v2 reference): ``KEY_KEPT_S``. A 409 ``PREVIOUS_REQUEST_IN_PROGRESS`` (the first
  call with the key still runs) is retried, never a refusal.
- ``refunds_of``: the refunds the order shows (``GET /v2/checkout/orders/{id}``,
  ``purchase_units[].payments.refunds``), each read in full (``GET /v2/payments/refunds/{id}``)
  where the order's copy does not carry its ``custom_id``: which fields PayPal copies into the
  order is not documented, so the tag is never assumed to be there.
- ``reason_problem``: PayPal's rule for ``note_to_payer`` ("The reason for the refund. Appears in
  both the payer's transaction history and the emails that the payer receives."; ``minLength``
  1, ``maxLength`` 255, ``pattern`` ``^.*$``, so one line).

A refund's status (``COMPLETED``, ``PENDING``, ``CANCELLED``, ``FAILED``) is the
``ProviderRefund``'s state (``events.REFUND_STATES``); no PayPal refusal means "a refund is
already pending" (the refund call's 422 issues, payments_payment_v2.json
``captures.refund-422``), so ``RefundAlreadyPending`` is never raised here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import httpx

from edge.errors import ProviderError
from edge.providers import answers, calls
from edge.providers.base import FollowUpRequest, ProviderRefund
from edge.providers.calls import Answer
from edge.providers.paypal import api, events, money

KEY_KEPT_S = 45 * 24 * 3600  # how long PayPal keeps a refund call's PayPal-Request-Id
NOTE_MAX = 255  # refund_request.note_to_payer maxLength
# What ``.`` does not match in the regular expressions PayPal's pattern may run under (Java's
# and ECMAScript's): a note holding one is not "^.*$"
LINE_BREAKS = frozenset("\n\r\x85\u2028\u2029")


def reason_problem(reason: str) -> str | None:
    """Why PayPal would refuse ``reason`` as ``note_to_payer``; None when it takes it (an empty
    reason is no note: the refund goes without one). Its length is counted in UTF-16 units, the
    longer of the ways PayPal may count it."""
    if any(c in LINE_BREAKS for c in reason):
        return (
            "PayPal shows the reason to the buyer, in their transaction history and emails: it"
            " must be one line (no line break)."
        )
    if len(reason.encode("utf-16-le")) // 2 > NOTE_MAX:
        return (
            f"PayPal shows the reason to the buyer, in their transaction history and emails: it"
            f" must be at most {NOTE_MAX} characters."
        )
    return None


async def send_refund(request: FollowUpRequest) -> ProviderRefund:
    """Give back ``amount`` of the order's capture, tagged with the node's refund id; the
    refund as PayPal answered it (made now, or by an earlier attempt with the same key)."""
    tx, params, credentials = request.tx, request.follow_up.params, request.credentials
    refund_id, currency = str(params["refundId"]), str(tx["currency"])
    order = await read_order(request.http, credentials, tx["isTest"], _order_of(tx))
    if not order.ok:
        raise api.refused(order, credentials)
    capture_id = api.object_id(events.first_capture(order.body))
    if capture_id is None:
        raise calls.provider_error("The PayPal order has no capture to refund.", retryable=False)
    value = money.to_paypal(int(params["amount"]), currency)
    if value is None:
        raise calls.provider_error(
            f"PayPal cannot refund this amount in {currency}.", retryable=False
        )
    body: dict[str, Any] = {
        "amount": {"currency_code": currency, "value": value},
        "custom_id": refund_id,
    }
    if params.get("reason"):
        body["note_to_payer"] = str(params["reason"])
    answer = await api.call(
        request.http,
        credentials,
        tx["isTest"],
        "POST",
        f"/v2/payments/captures/{capture_id}/refund",
        body,
        request_id=refund_id,
    )
    if not answer.ok:
        raise _refund_refused(answer, credentials)
    made = events.provider_refund(answer.body)
    if made is None:
        # the same key answers the same refund when asked again
        raise answers.without(api.API, "the refund's id")
    # the answer to the node's own key is the node's refund, whatever fields it shows
    return made if made.tag is not None else replace(made, tag=refund_id)


def _refund_refused(answer: Answer, credentials: Mapping[str, Any]) -> ProviderError:
    """The refusal of a refund call; a 409 (``PREVIOUS_REQUEST_IN_PROGRESS``, "a previous call
    for the given resource is in progress", the refund's only 409 in payments_payment_v2.json)
    is asked again, never settled: the first call with the same key may yet succeed."""
    refused = api.refused(answer, credentials)
    if answer.status != 409:
        return refused
    return calls.provider_error(refused.message, retryable=True)


async def refunds_of(request: FollowUpRequest) -> tuple[ProviderRefund, ...]:
    """The refunds PayPal holds for the transaction's order (its capture's), tagged where the
    node made them."""
    tx, credentials = request.tx, request.credentials
    order = await read_order(request.http, credentials, tx["isTest"], _order_of(tx))
    if not order.ok:
        raise api.refused(order, credentials)
    found = await full_refunds(request.http, credentials, bool(tx["isTest"]), order.body)
    return tuple(r for r in map(events.provider_refund, found) if r is not None)


async def read_order(
    http: httpx.AsyncClient, credentials: Mapping[str, Any], test: bool, order_id: str
) -> Answer:
    """``GET /v2/checkout/orders/{id}``: whatever PayPal answered (the caller reads a 404)."""
    return await api.call(http, credentials, test, "GET", f"/v2/checkout/orders/{order_id}")


def _order_of(tx: Mapping[str, Any]) -> str:
    """The order the node made for ``tx`` (its ``providerRef``)."""
    order_id = api.object_id(tx.get("providerRef"))
    if order_id is None:
        raise calls.provider_error("No PayPal order was made for this checkout.", retryable=False)
    return order_id


async def full_refunds(
    http: httpx.AsyncClient, credentials: Mapping[str, Any], test: bool, order: Mapping[str, Any]
) -> list[Mapping[str, Any]]:
    """The order's refunds, each as ``GET /v2/payments/refunds/{id}`` shows it where the order's
    copy lacks its ``custom_id`` (a refund made in PayPal's own dashboard has none, and is read
    each time: there are few)."""
    found: list[Mapping[str, Any]] = []
    for refund in events.order_refunds(order):
        refund_id = api.object_id(refund.get("id"))
        if refund.get("custom_id") or refund_id is None:
            found.append(refund)
            continue
        answer = await api.call(http, credentials, test, "GET", f"/v2/payments/refunds/{refund_id}")
        if not answer.ok:
            raise api.refused(answer, credentials)
        found.append(answer.body)
    return found
