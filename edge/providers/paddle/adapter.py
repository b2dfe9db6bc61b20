"""Paddle Billing: card payments and subscriptions through Paddle.js's overlay checkout,
signed webhooks, the customer portal, refunds, and asking Paddle (CONTRACT 4.2, 4.3, 4.3a,
4.4).

- Checkout: a transaction with a non-catalog price (``POST /transactions``), the node's
  transaction id, customerRef and metadata in ``custom_data``, which Paddle copies to the
  subscription and to every renewal. The answer is ``type: token``: the ``txn_`` id, which the
  browser hands to ``Paddle.Checkout.open({transactionId})`` after
  ``Paddle.Initialize({token: clientToken})``. Paddle's transactions do not lapse on a clock
  the node is told, so ``expiresAt`` is null; the node may cancel one it gives up on
  (``cancel_checkout``). A checkout taken up again after its first request was cut short
  adopts the transaction that request made, if any (``_made_before``).
- Webhooks: ``signature`` (the ``Paddle-Signature`` scheme; Paddle signs every attempt afresh,
  so the timestamp window applies) and ``events`` (the table).
- Refunds (``send_refund``, ``refunds_of``): refund adjustments, tagged with the node's refund
  id in their ``reason`` (``adjustments``). Paddle honours no idempotency key, so
  ``edge.providers.refunding`` asks ``refunds_of`` before every attempt and adopts its own.
- Asking Paddle (``sync``, ``list_events``): the transaction, its adjustments and its
  subscription; the event stream.
- Portal: a customer portal session for the subscription's Paddle customer.

The API key goes only into the ``Authorization`` header (``api``): error messages never
contain it.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any

from edge.domain.timefmt import iso_ms
from edge.errors import Conflict
from edge.providers import answers, calls
from edge.providers.base import (
    CANCEL_CHECKOUT,
    CheckoutRequest,
    CheckoutResult,
    CredentialField,
    FollowUpRequest,
    FollowUpResult,
    PortalRequest,
    PortalResult,
    PriceProblem,
    Provider,
    ProviderRefund,
    RefundAlreadyPending,
)
from edge.providers.paddle import adjustments, api, checking, events, money, signature, sync
from edge.providers.paddle.api import Account, data_object, error_code
from edge.providers.reading import mapping

MAX_NAME = 200  # what the node sends as a price or product name
# a non-catalog price's ``description`` is 2 to 500 characters (openapi.yaml,
# transaction-price-create-base): the node sends the product's name there
MIN_NAME = 2
# a checkout taken up again looks for what its first request made from this long before the
# checkout's making (the node's clock and Paddle's may be apart)
MADE_SLACK_MS = 2 * 60 * 1000
TRANSACTIONS_PER_PAGE = "30"  # per_page_transaction_query: at most 30
# the statuses of a transaction a buyer can still be sent to (or has paid)
OPEN = ("draft", "ready", "billed", "paid", "completed")
CANCEL = CANCEL_CHECKOUT  # the follow-up that cancels a checkout the node gave up on
# developer.paddle.com/errors/adjustments/adjustment_pending_refund_request: 400, "You are
# unable to create further adjustments against this transaction as there is a pending refund
# request"
PENDING_REFUND = "adjustment_pending_refund_request"
# developer.paddle.com/errors/transactions/transaction_invalid_status_change: a transaction
# that is not draft, ready or billed cannot be canceled
INVALID_STATUS_CHANGE = "transaction_invalid_status_change"


@dataclass(frozen=True)
class PaddleProvider(Provider):
    def price_problem(self, amount_minor: int, currency: str, name: str) -> PriceProblem | None:
        if money.to_paddle(amount_minor, currency) is None:
            return PriceProblem("currency", f"Paddle does not take {currency}")
        if len(name.strip()) < MIN_NAME:
            return PriceProblem(
                "name", f"Paddle needs a name of {MIN_NAME} characters or more for a price"
            )
        return None

    async def create_checkout(self, request: CheckoutRequest) -> CheckoutResult:
        account = Account.of(request.http, request.credentials, bool(request.tx["isTest"]))
        body = checkout_body(request)
        answer = await _made_before(account, request.tx, body) if request.again else None
        if answer is None:
            answer = await account.entity("POST", "/transactions", body)
        txn = answers.read(api.API, answer, api.Transaction).id
        return CheckoutResult(
            fields={"token": txn, "publishableKey": request.credentials["clientToken"]},
            provider_ref=txn,
            expires_at_ms=None,
        )

    async def portal_url(self, request: PortalRequest) -> PortalResult:
        customer = request.subscription.get("providerCustomer")
        if not customer:
            raise Conflict(
                "portal_unsupported", "This subscription has no Paddle customer on record."
            )
        subscription = request.subscription.get("providerRef")
        account = Account.of(
            request.http, request.credentials, bool(request.subscription.get("isTest"))
        )
        session = await account.entity(
            "POST",
            f"/customers/{customer}/portal-sessions",
            {"subscription_ids": [subscription] if subscription else []},
        )
        return PortalResult(url=answers.read(api.API, session, api.PortalSession).url)


async def send_refund(request: FollowUpRequest) -> ProviderRefund:
    """Ask Paddle to give back part or all of the checkout's transaction (``POST
    /adjustments``, action refund, openapi.yaml ``adjustment-create``): ``type: full`` ("the
    grand total for the related transaction is adjusted") when the follow-up gives back all
    that was charged, else ``partial`` for the amount on the transaction's line. The reason
    carries the node's refund id (``adjustments.tagged``). Paddle reviews most live refunds
    (``pending_approval``); its ``adjustment.updated`` says when it approved or rejected one.
    ``RefundAlreadyPending`` when Paddle refuses because a refund of the transaction waits for
    review (perhaps this one, from an attempt whose answer was lost)."""
    tx, params = request.tx, request.follow_up.params
    account = Account.of(request.http, request.credentials, bool(tx["isTest"]))
    txn = str(tx["providerRef"])
    body: dict[str, Any] = {
        "action": "refund",
        "transaction_id": txn,
        "reason": adjustments.tagged(params.get("reason"), str(params["refundId"])),
    }
    if params.get("whole"):
        body["type"] = "full"
    else:
        amount = money.to_paddle(int(params["amount"]), str(tx["currency"]))
        if amount is None:
            raise calls.provider_error(
                f"Paddle takes no refund of {params['amount']} {tx['currency']}.",
                retryable=False,
            )
        line = await _refund_line(account, txn)
        body.update(type="partial", items=[{"item_id": line, "type": "partial", "amount": amount}])
    answer = await account.answer("POST", "/adjustments", body=body)
    if not answer.ok:
        if error_code(answer) == PENDING_REFUND:
            raise RefundAlreadyPending(f"Paddle holds a refund of {txn} for review.")
        raise account.refused(answer)
    made = adjustments.provider_refund(data_object(answer))
    if made is None:
        raise answers.without(api.API, "the refund adjustment it made")
    return made


async def _refund_line(account: Account, txn: str) -> str:
    """The transaction item a partial refund is taken from: the node's transaction has one."""
    entity = await account.entity("GET", f"/transactions/{txn}")
    lines = entity.get("details", {}).get("line_items") if isinstance(entity, dict) else None
    line = lines[0].get("id") if isinstance(lines, list) and lines else None
    if not isinstance(line, str):
        raise calls.provider_error("Paddle's transaction has no line to refund.", retryable=False)
    return line


async def refunds_of(request: FollowUpRequest) -> tuple[ProviderRefund, ...]:
    """The refunds Paddle holds for the checkout's transaction, whatever their status (``GET
    /adjustments?transaction_id=...&action=refund``, every page), each with the node's refund
    id where its reason carries one."""
    tx = request.tx
    account = Account.of(request.http, request.credentials, bool(tx["isTest"]))
    listed = await account.listing(
        "/adjustments",
        {"transaction_id": str(tx["providerRef"]), "action": "refund", "per_page": "50"},
    )
    return tuple(r for r in map(adjustments.provider_refund, listed) if r is not None)


async def cancel_checkout(request: FollowUpRequest) -> FollowUpResult:
    """Cancel the checkout's transaction at Paddle (``PATCH /transactions/{id}``, ``{"status":
    "canceled"}``, openapi.yaml update-transaction: "Cancel a billed transaction"), once the
    node has given up on it. Paddle cancels only a draft, ready or billed transaction; one the
    buyer paid meanwhile is refused (``transaction_invalid_status_change``), and is then read,
    so the result's events say it was paid. Either way the events are the transaction's as
    ``sync`` reads it (the same dedup ids and changes), so a webhook that comes too is a
    duplicate."""
    tx = request.tx
    txn = str(tx.get("providerRef") or "")
    if not txn.startswith("txn_"):
        return FollowUpResult(detail="no Paddle transaction on record: nothing canceled")
    account = Account.of(request.http, request.credentials, bool(tx["isTest"]))
    answer = await account.answer("PATCH", f"/transactions/{txn}", body={"status": "canceled"})
    if answer.ok:
        entity, said = data_object(answer), f"Paddle canceled {txn}"
    elif error_code(answer) == INVALID_STATUS_CHANGE:
        answer = await account.answer("GET", f"/transactions/{txn}")
        if not answer.ok:
            raise account.refused(answer)
        entity = data_object(answer)
        said = f"Paddle did not cancel {txn}: it is {entity.get('status')}"
    else:
        raise account.refused(answer)
    return FollowUpResult(detail=said, events=sync.transaction_events(entity), body=answer.raw)


async def _made_before(
    account: Account, tx: Mapping[str, Any], body: Mapping[str, Any]
) -> dict[str, Any] | None:
    """The transaction an earlier request for this checkout made, if Paddle has one still
    open: Paddle honours no idempotency key, so a checkout taken up again (its first request
    cut short after it may have reached Paddle) asks first. Paddle's list filters by the time
    of making, not by ``custom_data``: the API's transactions made while the checkout's calls
    could have been (``MADE_SLACK_MS`` either side, for clocks apart), oldest first; the one
    asking what this checkout would (its ``custom_data``, currency and lines; one a
    Paddle.js checkout made is of origin ``web``). A canceled one is not handed out again."""
    first = int(tx["createdAt"])
    last = int(tx.get("calledAt") or first)  # a retry's own call, recorded before it ran
    window = {
        "origin": "api",
        "created_at[GTE]": iso_ms(max(0, first - MADE_SLACK_MS)),
        "created_at[LTE]": iso_ms(last + MADE_SLACK_MS),
        "order_by": "id[ASC]",
        "per_page": TRANSACTIONS_PER_PAGE,
    }
    async with aclosing(account.entities("/transactions", window)) as listed:
        async for transaction in listed:
            if (
                transaction.get("origin") == "api"
                and transaction.get("status") in OPEN
                and transaction.get("custom_data") == body["custom_data"]
                and transaction.get("currency_code") == body["currency_code"]
                and _lines(transaction.get("items")) == _lines(body["items"])
            ):
                return transaction
    return None


def _lines(items: Any) -> list[tuple[Any, Any]] | None:
    """What a transaction's lines charge: each one's quantity and unit price."""
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
        return None
    return [
        (i.get("quantity"), mapping(mapping(i, "price"), "unit_price").get("amount")) for i in items
    ]


def checkout_body(request: CheckoutRequest) -> dict[str, Any]:
    """The ``POST /transactions`` body for a pending transaction: one non-catalog price."""
    tx = request.tx
    currency = str(tx["currency"]).upper()
    total = int(tx["amount"])
    if money.to_paddle(total, currency) is None:
        raise Conflict(
            "amount_not_supported",
            f"Paddle does not take {currency}.",
            field="currency",
        )
    quantity = int(tx.get("quantity") or 1)
    unit, rest = divmod(total, quantity)
    if rest:  # an amount that does not split evenly is charged as one line of the total
        unit, quantity = total, 1
    name = str(request.product["name"])[:MAX_NAME]
    price: dict[str, Any] = {
        "description": name,
        "name": name,
        "unit_price": {"amount": money.to_paddle(unit, currency), "currency_code": currency},
        "product": {"name": name, "tax_category": "standard"},
    }
    if quantity > 1:  # a non-catalog price allows 1 to 100 unless told otherwise
        price["quantity"] = {"minimum": 1, "maximum": quantity}
    if tx["kind"] == "subscription":
        price["billing_cycle"] = {"interval": tx["interval"], "frequency": 1}
    custom = {**(tx.get("metadata") or {}), "txId": tx["id"]}
    if tx.get("customerRef"):
        custom["customerRef"] = tx["customerRef"]
    return {
        "items": [{"quantity": quantity, "price": price}],
        "currency_code": currency,
        "custom_data": custom,
    }


PADDLE = PaddleProvider(
    checkout_keyed=False,
    name="paddle",
    display_name="Paddle",
    kind="form",
    checkout_type="token",
    default_label="Card",
    credential_fields=(
        # keys made before May 2025 are 50 random characters, so any other shape is allowed
        CredentialField("apiKey", secret=True, kinds=("paddle_api_key",)),
        CredentialField("clientToken", kinds=("paddle_client_token",), strict=True),
        CredentialField("webhookSecret", secret=True, kinds=("paddle_notification_secret",)),
        CredentialField("apiBase", required=False, shape="url"),
    ),
    publishable_field="clientToken",
    webhook=signature.WEBHOOK,
    refunds=True,
    read_event=events.normalize,
    follow_ups={CANCEL: cancel_checkout},
    send_refund=send_refund,
    refunds_of=refunds_of,
    sync=sync.sync,
    list_events=sync.list_events,
    walks_cover_checkouts=True,
    check_credentials=checking.check_credentials,
)
