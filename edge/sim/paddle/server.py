"""A loopback Paddle Billing: the API subset the node calls, the card form that stands in for
Paddle.js's overlay, the customer portal, and notifications signed as Paddle signs them.

State is in memory, per account: an account is an API key, made on its first use. Every API
call needs ``Authorization: Bearer <key>`` and ``Paddle-Version: 1``; entities of another
account are not found.

API (JSON in and out, answers in Paddle's ``{"data", "meta"}`` envelope, refusals in its
``{"error", "meta"}`` shape, validation errors with their ``errors`` list):
``POST /transactions`` (non-catalog prices, or the account's catalog ``price_id``),
``GET /transactions/{id}``, ``PATCH /transactions/{id}`` (cancel, or replace ``custom_data``
while the checkout is open), ``POST /adjustments`` (refunds, created ``pending_approval``),
``GET /adjustments`` and ``GET /events`` (filtered, ordered and paged as Paddle's lists are:
``lists``), ``GET /subscriptions/{id}``, ``POST /customers/{id}/portal-sessions``. Pages:
the checkout (``checkout.url``, ``/pay?_ptxn=`` as Paddle's default payment link, and
``/checkout/{id}``) with Pay, Decline and Close; the portal (``/portal/{session}``) with
Cancel.

Paddle.js (``checkout_open``, ``update_checkout``) needs only the account's client-side token,
which a web page carries for anyone to read: it opens a checkout for the merchant's catalog
prices, or the node's own transaction, and sets or replaces ``custom_data`` with whatever the
page says (PaddleHQ/paddle-js-wrapper@7e60bf55 types/checkout/checkout.d.ts:111-131; Paddle
changelog 2025-02-27, update-checkout-custom-data).

Paddle's refusals, as its API reference and error pages give them: a non-catalog price's
``description`` of 2 to 500 characters (openapi.yaml ``transaction-price-create-base``); a
payment only for a ``ready`` transaction (``transaction_not_ready_cannot_process_payment``);
a cancel only from draft, ready or billed (``transaction_invalid_status_change``: a completed
one takes adjustments); refunds only of a completed transaction, none while another waits for
approval, never more than is left, per item or in all.

Notifications: each event goes to every destination of the account that takes its type, as
its own notification (a fresh ``notification_id``, the same ``event_id``), in order, each
awaited before the action answers, with a few quick retries; every attempt is signed afresh
(``Paddle-Signature: ts=..;h1=..``). Outcomes are appended to ``delivered``. Before each event
is sent, ``webhook_faults`` (``edge.sim.faults.WebhookFaults``) says whether it is dropped
(never sent; it stays in ``GET /events``, as Paddle's event stream keeps what its notifications
lost), held in ``held`` until ``release()`` (``deliveries_paused`` holds every event too), or
signed with a wrong secret.

Failures on demand: ``fail_next_requests`` (the next API calls answer 503), ``rate_limit()``
(the next answer 429 ``too_many_requests`` with ``Retry-After``, as
developer.paddle.com/errors/shared/too_many_requests shows it), and ``faults`` (an answer lost
after the request was carried out, ``edge.sim.faults``).
"""

from __future__ import annotations

import copy
import json
import re
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx
import trio
from quart import Response, request
from quart_trio import QuartTrio

from edge.providers.paddle.money import CURRENCIES
from edge.sim.faults import DROP, HOLD, MISSIGN, WRONG_SECRET, WebhookFaults
from edge.sim.loopback import LoopbackServer
from edge.sim.paddle import deliveries, lists, objects, pages

DELIVERY_RETRIES = 3
INTERVALS = frozenset({"day", "week", "month", "year"})
_AMOUNT = re.compile(r"0|[1-9][0-9]{0,17}")


class PaddleError(ValueError):
    """An API answer in Paddle's error shape; raised by the Python API too, for what Paddle
    refuses."""

    def __init__(
        self,
        status: int,
        code: str,
        detail: str,
        errors: list[dict[str, str]] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(f"{code}: {detail}")
        self.status, self.code, self.detail, self.errors = status, code, detail, errors
        self.headers = dict(headers or {})


def _invalid(field: str, message: str) -> PaddleError:
    """A request that does not pass validation (developer.paddle.com/errors/shared/
    invalid_field: 400, "Request does not pass validation.", ``errors`` of
    ``{field, message}``)."""
    return PaddleError(
        400,
        "invalid_field",
        "Request does not pass validation.",
        [{"field": field, "message": message}],
    )


def _not_ready(txn: Mapping[str, Any]) -> PaddleError:
    """developer.paddle.com/errors/transactions/transaction_not_ready_cannot_process_payment:
    422; a draft, canceled or completed transaction takes no payment."""
    return PaddleError(
        422,
        "transaction_not_ready_cannot_process_payment",
        "Cannot process payment for non-ready transaction",
    )


def _immutable() -> PaddleError:
    """developer.paddle.com/errors/transactions/transaction_immutable: a transaction that is
    not draft or ready cannot be updated."""
    return PaddleError(400, "transaction_immutable", "Cannot update immutable transaction")


def _not_found(what: str) -> PaddleError:
    return PaddleError(404, "not_found", f"Entity {what} not found")


def _too_many(retry_after_s: int) -> PaddleError:
    """developer.paddle.com/errors/shared/too_many_requests: 429, type api_error, "IP address
    exceeded the allowed rate limit. Retry after the number of seconds in the Retry-After
    header."; developer.paddle.com/api-reference/about/rate-limiting: "A 429 response includes
    a Retry-After header"."""
    return PaddleError(
        429,
        "too_many_requests",
        "IP address exceeded the allowed rate limit. Retry after the number of seconds in the"
        " Retry-After header.",
        headers={"Retry-After": str(retry_after_s)},
    )


@dataclass
class _Destination:
    id: str
    url: str
    secret: str
    event_types: frozenset[str]  # empty: every type

    def takes(self, event_type: str) -> bool:
        return not self.event_types or event_type in self.event_types


@dataclass
class _Account:
    api_key: str
    transactions: dict[str, dict[str, Any]] = field(default_factory=dict)
    subscriptions: dict[str, dict[str, Any]] = field(default_factory=dict)
    customers: set[str] = field(default_factory=set)
    # transaction item id -> what its refunds (approved or waiting) took back, minor units
    adjusted: dict[str, int] = field(default_factory=dict)
    adjustments: dict[str, dict[str, Any]] = field(default_factory=dict)  # adj id -> adjustment
    # adjustments whose notifications show ``type: null`` (``refund(null_type=True)``)
    null_typed: set[str] = field(default_factory=set)
    destinations: list[_Destination] = field(default_factory=list)
    events: dict[str, dict[str, Any]] = field(default_factory=dict)  # event id -> event
    portals: dict[str, str] = field(default_factory=dict)  # session id -> customer id
    client_tokens: set[str] = field(default_factory=set)  # Paddle.js's, public by design
    catalog: dict[str, tuple[dict[str, Any], dict[str, Any]]] = field(
        default_factory=dict
    )  # price id -> (price, product)


class PaddleSimulator(LoopbackServer):
    """Run it in a nursery: ``url = await nursery.start(sim.run)``; ``stop()`` ends it. Tests may
    set ``fail_next_requests`` (the next N API calls answer 503), ``rate_limit()``,
    ``deliveries_paused`` and ``webhook_faults``."""

    def __init__(self) -> None:
        self.fail_next_requests = 0
        self.rate_limited_requests = 0  # the next N API calls answer 429
        self.retry_after_s = 1
        self.deliveries_paused = False
        self.webhook_faults = WebhookFaults()
        self.held: list[tuple[_Account, dict[str, Any]]] = []
        # (the notification as delivered, the destination's url, the last attempt's status)
        self.delivered: list[tuple[dict[str, Any], str, int]] = []
        self._accounts: dict[str, _Account] = {}
        # API keys revoked in the dashboard, or of the other environment: 403 invalid_token
        self.refused_keys: set[str] = set()
        super().__init__(self._build_app())

    # --- Python API for tests and the demo ----------------------------------------------

    def register_destination(
        self,
        api_key: str,
        url: str,
        secret: str | None = None,
        event_types: list[str] | None = None,
    ) -> str:
        """A notification destination of the account ``api_key`` (made if new) to ``url``;
        returns its secret (made in Paddle's form unless given)."""
        secret = secret or "pdl_ntfset_" + objects.paddle_id("x")[2:] + "_" + secrets.token_urlsafe(
            24
        )
        self._account(api_key).destinations.append(
            _Destination(objects.paddle_id("ntfset"), url, secret, frozenset(event_types or ()))
        )
        return secret

    def sign_headers(self, secret: str, body: bytes) -> dict[str, str]:
        """The headers Paddle sends with ``body`` to a destination with ``secret``, now."""
        return deliveries.signed(body, secret)

    def rate_limit(self, times: int = 1, retry_after_s: int = 1) -> None:
        """The next ``times`` API calls answer 429 ``too_many_requests`` with ``Retry-After:
        retry_after_s`` (``_too_many``); nothing they ask is done."""
        self.rate_limited_requests, self.retry_after_s = times, retry_after_s

    def transaction(self, txn_id: str) -> dict[str, Any]:
        return self._find("transactions", txn_id)[1]

    def subscription(self, sub_id: str) -> dict[str, Any]:
        return self._find("subscriptions", sub_id)[1]

    def transaction_of(self, tx_id: str) -> str:
        """The transaction made through the API (``origin: api``, as the node makes them)
        whose ``custom_data.txId`` is ``tx_id``. A Paddle.js checkout may carry the same
        custom_data: it is not the one."""
        for account in self._accounts.values():
            for txn_id, txn in account.transactions.items():
                custom = txn.get("custom_data") or {}
                if custom.get("txId") == tx_id and txn["origin"] == "api":
                    return txn_id
        raise KeyError(tx_id)

    def adjustment(self, adj_id: str) -> dict[str, Any]:
        return self._find("adjustments", adj_id)[1]

    def adjustments_of(self, txn_id: str) -> list[dict[str, Any]]:
        """The adjustments of the transaction ``txn_id``, oldest first (the dashboard's list)."""
        return [
            adjustment
            for account in self._accounts.values()
            for adjustment in account.adjustments.values()
            if adjustment["transaction_id"] == txn_id
        ]

    def register_client_token(self, api_key: str, token: str | None = None) -> str:
        """A client-side token of the account ``api_key`` (made if new), the one Paddle.js is
        initialized with on the merchant's pages (``test_`` and 27 characters in sandbox)."""
        token = token or "test_" + secrets.token_hex(14)[:27]
        self._account(api_key).client_tokens.add(token)
        return token

    def create_price(
        self,
        api_key: str,
        name: str,
        amount: int,
        currency: str,
        billing_cycle: Mapping[str, Any] | None = None,
    ) -> str:
        """The merchant puts a product and its price in the catalog (Paddle's dashboard, or
        ``POST /products`` and ``POST /prices``); returns the ``pri_`` id."""
        if currency not in CURRENCIES or amount < 0:
            raise _invalid("unit_price", "an amount of 0 or more in a currency Paddle takes")
        at = objects.now_iso()
        made = objects.product({"name": name, "tax_category": "standard"}, at, "standard")
        given = {
            "description": name,
            "name": name,
            "unit_price": {"amount": str(amount), "currency_code": currency},
            "billing_cycle": dict(billing_cycle) if billing_cycle else None,
        }
        item_price = objects.price(given, made["id"], at, "standard")
        self._account(api_key).catalog[item_price["id"]] = (item_price, made)
        return str(item_price["id"])

    async def checkout_open(
        self,
        client_token: str,
        *,
        items: list[Mapping[str, Any]] | None = None,
        transaction_id: str | None = None,
        custom_data: Mapping[str, Any] | None = None,
    ) -> str:
        """``Paddle.Checkout.open()`` in a buyer's browser, with the client-side token alone
        (PaddleHQ/paddle-js-wrapper@7e60bf55 types/checkout/checkout.d.ts:76-79,111-124):
        ``items`` (``[{priceId, quantity}]`` of the account's catalog) make a new transaction,
        ``origin: web``, carrying ``customData`` as given; ``transaction_id`` opens one made
        earlier. Returns the transaction's id; the buyer then pays at its card form.

        Whether ``customData`` given with a ``transactionId`` replaces the transaction's own is
        not documented, so it is not simulated (ValueError); ``update_checkout`` does replace
        it."""
        account = self._by_token(client_token)
        if transaction_id is not None:
            if items is not None or custom_data is not None:
                raise ValueError(
                    "open() with a transactionId: items are the transaction's, and what"
                    " customData does then is not documented (use update_checkout)"
                )
            txn = account.transactions.get(transaction_id)
            if txn is None:
                raise _not_found(transaction_id)
            if txn["status"] not in ("draft", "ready"):
                raise _not_ready(txn)
            return transaction_id
        if not items:
            raise _invalid("items", "Paddle.Checkout.open needs items or a transactionId")
        lines = []
        for n, item in enumerate(items):
            found = account.catalog.get(str(item.get("priceId")))
            quantity = item.get("quantity", 1)
            if found is None or found[0]["status"] != "active":
                raise _not_found(str(item.get("priceId")))
            limits = found[0]["quantity"]
            if not isinstance(quantity, int) or not (
                limits["minimum"] <= quantity <= limits["maximum"]
            ):
                raise _invalid(f"items[{n}].quantity", "outside the price's quantity range")
            lines.append((copy.deepcopy(found[0]), copy.deepcopy(found[1]), quantity))
        currencies = {p["unit_price"]["currency_code"] for p, _, _ in lines}
        if len(currencies) != 1:
            raise _invalid("items", "every price must be in one currency")
        custom = _custom_data(custom_data, "customData") if custom_data is not None else None
        txn = objects.transaction(self.url, lines, currencies.pop(), custom, origin="web")
        account.transactions[txn["id"]] = txn
        await self._emit(account, ("transaction.created", txn))
        return str(txn["id"])

    async def update_checkout(
        self, client_token: str, txn_id: str, custom_data: Mapping[str, Any]
    ) -> None:
        """``Paddle.Checkout.updateCheckout({customData})`` on an open checkout: "If custom
        data already exists, it's replaced. Must be valid JSON and contain at least one key"
        (Paddle changelog 2025-02-27, update-checkout-custom-data), on any transaction of the
        account whose checkout is open, the node's own included: ``transaction.updated``."""
        account = self._by_token(client_token)
        txn = account.transactions.get(txn_id)
        if txn is None:
            raise _not_found(txn_id)
        await self._update(account, txn, {"custom_data": _custom_data(custom_data, "customData")})

    def subscription_of(self, tx_id: str) -> str:
        """The subscription whose ``custom_data.txId`` is ``tx_id``."""
        for account in self._accounts.values():
            for sub_id, sub in account.subscriptions.items():
                if (sub.get("custom_data") or {}).get("txId") == tx_id:
                    return sub_id
        raise KeyError(tx_id)

    async def pay(self, txn_id: str, *, credit: int = 0) -> None:
        """The buyer pays: ``transaction.paid``; for a recurring price, the subscription
        (``subscription.created``, ``subscription.activated``); ``transaction.completed``.
        ``credit``: the customer's credit balance pays that much of it, the card the rest
        (openapi.yaml ``transaction_totals``: ``credit`` "includes credits applied using a
        customer's credit balance", ``grand_total`` "Total due on a transaction after credits
        but before any payments"; developer.paddle.com/build/customers/get-customer-credit-
        balances: "Credit balances are automatically used to pay for future transactions")."""
        account, txn = self._find("transactions", txn_id)
        if txn["status"] not in ("draft", "ready"):
            raise _not_ready(txn)  # canceled, or paid already
        self._attach_customer(account, txn)
        if credit:
            objects.apply_credit(txn, credit)
        txn["payments"].insert(0, objects.payment_attempt(txn, declined=False))
        recurring = next(
            (i["price"]["billing_cycle"] for i in txn["items"] if i["price"]["billing_cycle"]), None
        )
        if recurring:
            start = objects.now_iso()
            txn["billing_period"] = {"starts_at": start, "ends_at": objects.later(start, recurring)}
        objects.settle(txn, "paid")
        await self._emit(account, ("transaction.paid", txn))
        if recurring:
            sub = objects.subscription(txn)
            account.subscriptions[sub["id"]] = sub
            txn["subscription_id"] = sub["id"]
            await self._emit(
                account, ("subscription.created", sub), ("subscription.activated", sub)
            )
        objects.settle(txn, "completed")
        await self._emit(account, ("transaction.completed", txn))

    async def decline(self, txn_id: str) -> None:
        """The buyer's card is refused: ``transaction.payment_failed``; the checkout stays
        open (``ready``)."""
        account, txn = self._find("transactions", txn_id)
        if txn["status"] not in ("draft", "ready"):
            raise _not_ready(txn)
        self._attach_customer(account, txn)
        txn["payments"].insert(0, objects.payment_attempt(txn, declined=True))
        txn["updated_at"] = objects.now_iso()
        await self._emit(account, ("transaction.payment_failed", txn))

    async def cancel_transaction(self, txn_id: str) -> None:
        """The merchant cancels an unpaid transaction (``PATCH /transactions/{id}``, status
        canceled): ``transaction.canceled``. Only a draft, ready or billed one: a paid or
        completed transaction is a record that takes adjustments (openapi.yaml, update
        transaction; developer.paddle.com/errors/transactions/transaction_invalid_status_change).
        """
        account, txn = self._find("transactions", txn_id)
        await self._cancel(account, txn)

    async def renew(self, sub_id: str) -> str:
        """The next cycle is paid: a ``subscription_recurring`` transaction (``transaction.paid``,
        ``transaction.completed``), then ``subscription.updated`` with the new period. Returns
        the renewal's id."""
        account, sub = self._find("subscriptions", sub_id)
        txn = objects.renewal(self.url, sub)
        account.transactions[txn["id"]] = txn
        txn["payments"].insert(0, objects.payment_attempt(txn, declined=False))
        objects.settle(txn, "paid")
        await self._emit(account, ("transaction.paid", txn))
        objects.settle(txn, "completed")
        await self._emit(account, ("transaction.completed", txn))
        sub["status"] = "active"
        objects.move_period(sub)
        await self._emit(account, ("subscription.updated", sub))
        return str(txn["id"])

    async def fail_renewal(self, sub_id: str) -> str:
        """The next cycle's payment fails: ``transaction.payment_failed``,
        ``transaction.past_due``, ``subscription.past_due``. Returns the renewal's id."""
        account, sub = self._find("subscriptions", sub_id)
        txn = objects.renewal(self.url, sub)
        account.transactions[txn["id"]] = txn
        txn["payments"].insert(0, objects.payment_attempt(txn, declined=True))
        await self._emit(account, ("transaction.payment_failed", txn))
        txn.update(status="past_due", updated_at=objects.now_iso())
        await self._emit(account, ("transaction.past_due", txn))
        sub.update(status="past_due", updated_at=objects.now_iso())
        await self._emit(account, ("subscription.past_due", sub))
        return str(txn["id"])

    async def refund(
        self,
        txn_id: str,
        amount: int | None = None,
        *,
        items: list[Mapping[str, Any]] | None = None,
        null_type: bool = False,
        approve: bool = True,
    ) -> str:
        """A refund, as the merchant asks for one (``POST /adjustments``, action refund):
        ``items`` (Paddle's request form, ``[{item_id, type: full|partial, amount}]``, type
        partial); else ``amount`` of the first line (type partial); else what is left (type
        full). Paddle creates it ``pending_approval`` (``adjustment.created``) and, once it
        approves it, sends ``adjustment.updated`` (status approved); ``approve=False`` leaves
        that to ``approve_refund`` or ``reject_refund``. ``null_type``: the notifications show
        ``type: null``, as Paddle's own SDK fixtures do (PaddleHQ/paddle-python-sdk@48c8cc04
        tests/Unit/Entities/_fixtures/notification/entity/adjustment.*.json). Returns the
        adjustment's id; ``PaddleError`` for what Paddle refuses."""
        account, txn = self._find("transactions", txn_id)
        body: dict[str, Any] = {"action": "refund", "transaction_id": txn_id, "reason": "refund"}
        if items is not None:
            body.update(type="partial", items=[dict(i) for i in items])
        elif amount is not None:
            line = txn["details"]["line_items"][0]["id"]
            body.update(
                type="partial",
                items=[{"item_id": line, "type": "partial", "amount": str(amount)}],
            )
        else:
            body["type"] = "full"
        made = await self._create_adjustment(account, body, null_type)
        if approve:
            await self.approve_refund(made["id"])
        return str(made["id"])

    async def approve_refund(self, adj_id: str) -> None:
        """Paddle approves a refund waiting for it: ``adjustment.updated``, approved."""
        await self._review(adj_id, "approved")

    async def reject_refund(self, adj_id: str) -> None:
        """Paddle rejects a refund waiting for it: ``adjustment.updated``, rejected; nothing
        was given back."""
        await self._review(adj_id, "rejected")

    async def chargeback(self, txn_id: str, amount: int | None = None) -> str:
        """The buyer's bank takes the payment back, all of it or ``amount`` of its first line:
        ``adjustment.created``, action chargeback, approved ("Automatically created by Paddle
        when a customer successfully disputes a charge", openapi.yaml ``adjustment_action``;
        "Paddle automatically creates an adjustment to refund the disputed amount",
        developer.paddle.com/api-reference/adjustments/overview). Returns its id."""
        return await self._adjust(
            txn_id, "chargeback", "Chargeback raised by the card issuer", amount
        )

    async def chargeback_reverse(self, txn_id: str) -> str:
        """Paddle wins the latest chargeback of ``txn_id`` not reversed yet: an adjustment of
        its amount, action chargeback_reverse ("created by Paddle when Paddle contests a
        chargeback successfully"), and the chargeback's status becomes ``reversed`` ("Set by
        Paddle when a chargeback_reversal ... adjustment is created for this adjustment",
        openapi.yaml ``status-adjustment``). Paddle sends ``adjustment.updated`` only for
        refunds (openapi.yaml ``adjustment.updated``), so only the reversal is notified.
        Without a chargeback on record, the whole transaction's is reversed."""
        account, _ = self._find("transactions", txn_id)
        reversed_one = self._latest(account, txn_id, "chargeback")
        amount = int(reversed_one["totals"]["total"]) if reversed_one else None
        made = await self._adjust(txn_id, "chargeback_reverse", "Chargeback reversed", amount)
        if reversed_one is not None:
            reversed_one.update(status="reversed", updated_at=objects.now_iso())
        return made

    async def chargeback_warning(self, txn_id: str, amount: int | None = None) -> str:
        """Paddle hears that a chargeback may come: ``adjustment.created``, action
        chargeback_warning ("Warning of an upcoming chargeback for the related transaction.
        Automatically created by Paddle", openapi.yaml ``adjustment_action``). Returns its id.
        """
        return await self._adjust(txn_id, "chargeback_warning", "Chargeback warning", amount)

    async def chargeback_warning_reverse(self, txn_id: str) -> str:
        """The warning is withdrawn: ``adjustment.created``, action chargeback_warning_reverse
        ("Reversal of a chargeback warning"), for the latest warning's amount. Whether Paddle
        marks the warning itself ``reversed`` is not documented, so its status stays."""
        account, _ = self._find("transactions", txn_id)
        warning = self._latest(account, txn_id, "chargeback_warning")
        amount = int(warning["totals"]["total"]) if warning else None
        return await self._adjust(
            txn_id, "chargeback_warning_reverse", "Chargeback warning reversed", amount
        )

    async def cancel_subscription(self, sub_id: str) -> None:
        """``subscription.canceled``, at once (not at the end of the period)."""
        account, sub = self._find("subscriptions", sub_id)
        at = objects.now_iso()
        sub.update(
            status="canceled",
            canceled_at=at,
            updated_at=at,
            next_billed_at=None,
            current_billing_period=None,
            scheduled_change=None,
        )
        await self._emit(account, ("subscription.canceled", sub))

    async def pause_subscription(self, sub_id: str) -> None:
        """``subscription.paused``, at once."""
        account, sub = self._find("subscriptions", sub_id)
        at = objects.now_iso()
        sub.update(status="paused", paused_at=at, updated_at=at, next_billed_at=None)
        await self._emit(account, ("subscription.paused", sub))

    async def resume_subscription(self, sub_id: str) -> None:
        """``subscription.resumed``: active again, billed at the end of its period."""
        account, sub = self._find("subscriptions", sub_id)
        period = sub.get("current_billing_period") or {}
        sub.update(
            status="active",
            paused_at=None,
            updated_at=objects.now_iso(),
            next_billed_at=period.get("ends_at"),
        )
        await self._emit(account, ("subscription.resumed", sub))

    async def redeliver(self, event_id: str) -> None:
        """Send an event again, as a replay does: a new notification of the same event."""
        for account in self._accounts.values():
            event = account.events.get(event_id)
            if event is not None:
                await self._deliver(account, event)
                return
        raise KeyError(event_id)

    async def release(self) -> None:
        """Deliver what was held (``deliveries_paused``, or ``webhook_faults.hold``), in
        order."""
        held, self.held = self.held, []
        for account, event in held:
            await self._deliver(account, event)

    async def release_held(self) -> None:
        """``release``, by its first name."""
        await self.release()

    # --- state ------------------------------------------------------------------------

    def _account(self, api_key: str) -> _Account:
        if api_key in self.refused_keys:
            raise PaddleError(403, "invalid_token", "Invalid or revoked API key.")
        account = self._accounts.get(api_key)
        if account is None:
            account = self._accounts[api_key] = _Account(api_key)
        return account

    def _find(self, kind: str, entity_id: str) -> tuple[_Account, dict[str, Any]]:
        for account in self._accounts.values():
            found = getattr(account, kind).get(entity_id)
            if found is not None:
                return account, found
        raise KeyError(entity_id)

    def _attach_customer(self, account: _Account, txn: dict[str, Any]) -> None:
        """The buyer typed an email and a country: a customer and an address, ``ready``."""
        if txn["customer_id"] is None:
            customer = objects.paddle_id("ctm")
            account.customers.add(customer)
            txn.update(customer_id=customer, address_id=objects.paddle_id("add"))
        txn.update(status="ready", updated_at=objects.now_iso())

    def _by_token(self, client_token: str) -> _Account:
        for account in self._accounts.values():
            if client_token in account.client_tokens:
                return account
        raise PaddleError(403, "forbidden", "The client-side token is not valid.")

    async def _update(
        self, account: _Account, txn: dict[str, Any], changes: Mapping[str, Any]
    ) -> None:
        """Change an open transaction (draft or ready): ``transaction.updated``."""
        if txn["status"] not in ("draft", "ready"):
            raise _immutable()
        txn.update(changes, updated_at=objects.now_iso())
        await self._emit(account, ("transaction.updated", txn))

    async def _cancel(self, account: _Account, txn: dict[str, Any]) -> None:
        if txn["status"] not in ("draft", "ready", "billed"):
            raise PaddleError(
                400,
                "transaction_invalid_status_change",
                f"Invalid attempt to change status from '{txn['status']}' to 'canceled'",
            )
        txn.update(status="canceled", updated_at=objects.now_iso())
        await self._emit(account, ("transaction.canceled", txn))

    async def _create_adjustment(
        self, account: _Account, body: Mapping[str, Any], null_type: bool = False
    ) -> dict[str, Any]:
        """A refund of a completed transaction, ``pending_approval``: ``adjustment.created``.
        Refused as Paddle refuses (developer.paddle.com/errors/adjustments/...): a transaction
        not completed, a refund of it still waiting for approval (openapi.yaml
        ``adjustment-create.transaction_id``), an item adjusted in full already or beyond what
        is left of it, a total beyond what is left."""
        if body.get("action") != "refund":
            raise _invalid("action", "the simulator takes refunds (credits are for invoices)")
        reason = body.get("reason")
        if not isinstance(reason, str) or not reason:
            raise _invalid("reason", "must be provided as part of the request")
        txn_id = str(body.get("transaction_id"))
        txn = account.transactions.get(txn_id)
        if txn is None:
            raise _not_found(txn_id)
        if txn["status"] != "completed":
            raise PaddleError(
                400,
                "adjustment_transaction_invalid_status_for_refund",
                f"The transaction being adjusted (refund) has a non supported status. ID: {txn_id}",
            )
        waiting = [
            a
            for a in account.adjustments.values()
            if a["transaction_id"] == txn_id and a["status"] == "pending_approval"
        ]
        if waiting:
            raise PaddleError(
                400,
                "adjustment_pending_refund_request",
                "You are unable to create further adjustments against this transaction as"
                " there is a pending refund request",
            )
        lines = {line["id"]: line for line in txn["details"]["line_items"]}

        asking: dict[str, int] = {}  # this request's own items so far

        def left(item_id: str) -> int:
            total = int(lines[item_id]["totals"]["total"])
            return total - account.adjusted.get(item_id, 0) - asking.get(item_id, 0)

        kind = body.get("type", "partial")
        taken: list[tuple[str, str, int]] = []
        if kind == "full":
            taken = [(i, "full", left(i)) for i in lines if left(i) > 0]
            if not taken:
                raise PaddleError(
                    400,
                    "adjustment_total_amount_above_remaining_allowed",
                    "The adjustment amount exceeds the total amount left to adjust."
                    f" Amount to Adjust: {objects.total_of(txn)}, Amount Left: 0",
                )
        elif kind == "partial":
            asked = body.get("items")
            if not isinstance(asked, list) or not asked:
                raise _invalid("items", "required when type is partial")
            problems = []
            for n, item in enumerate(asked):
                item = item if isinstance(item, dict) else {}
                item_id = str(item.get("item_id"))
                if item_id not in lines:
                    raise _invalid(f"items[{n}].item_id", "not an item of this transaction")
                item_type = item.get("type")
                if item_type == "full":
                    amount = left(item_id)
                elif item_type == "partial" and _AMOUNT.fullmatch(str(item.get("amount"))):
                    amount = int(item["amount"])
                else:
                    raise _invalid(f"items[{n}]", "type full, or partial with an amount")
                where = f"adjustment.transaction.items[{n}]"
                if left(item_id) <= 0:
                    problems.append(
                        {
                            "field": where,
                            "message": f"Adjustment item {item_id} has already been fully adjusted",
                        }
                    )
                elif amount <= 0:
                    problems.append(
                        {
                            "field": where,
                            "message": "You are attempting to make an adjustment"
                            f" with zero amount on a transaction item. ID {item_id}",
                        }
                    )
                elif amount > left(item_id):
                    problems.append(
                        {
                            "field": where,
                            "message": f"adjustment amount for item {item_id} is"
                            f" over remaining allowed {left(item_id)}",
                        }
                    )
                taken.append((item_id, item_type, amount))
                asking[item_id] = asking.get(item_id, 0) + max(amount, 0)
            if problems:
                raise PaddleError(
                    400,
                    "adjustment_transaction_item_invalid",
                    "One or more adjustment items cannot be processed",
                    problems,
                )
        else:
            raise _invalid("type", "full or partial")
        made = objects.adjustment_of(txn, "refund", taken, str(kind), reason, "pending_approval")
        for item_id, _, amount in taken:
            account.adjusted[item_id] = account.adjusted.get(item_id, 0) + amount
        account.adjustments[made["id"]] = made
        if null_type:
            account.null_typed.add(made["id"])
        await self._emit(account, ("adjustment.created", _notified(account, made)))
        return made

    async def _review(self, adj_id: str, verdict: str) -> None:
        account, made = self._find("adjustments", adj_id)
        if made["status"] != "pending_approval":
            raise ValueError(f"{adj_id} is {made['status']}, not waiting for approval")
        made.update(status=verdict, updated_at=objects.now_iso())
        txn = account.transactions[made["transaction_id"]]
        given = int(made["totals"]["total"])
        if verdict == "rejected":
            for item in made["items"]:
                account.adjusted[item["item_id"]] -= int(item["amount"])
        else:  # "totals after adjustments" (openapi.yaml transaction_details.adjusted_totals)
            adjusted = txn["details"]["adjusted_totals"]
            for key in ("subtotal", "total", "grand_total", "earnings"):
                adjusted[key] = str(int(adjusted[key]) - given)
        await self._emit(account, ("adjustment.updated", _notified(account, made)))

    async def _adjust(
        self, txn_id: str, action: str, reason: str, amount: int | None = None
    ) -> str:
        """An adjustment Paddle makes itself (a chargeback, a warning, their reversals),
        approved, kept with the account's adjustments (``GET /adjustments`` lists it). It does
        not change what is left to refund: what Paddle does there is not documented."""
        account, txn = self._find("transactions", txn_id)
        if txn["status"] != "completed":
            raise ValueError(f"{txn_id} is {txn['status']}, not completed")
        adjustment = objects.adjustment(txn, action, amount, reason, "approved")
        account.adjustments[adjustment["id"]] = adjustment
        await self._emit(account, ("adjustment.created", adjustment))
        return str(adjustment["id"])

    @staticmethod
    def _latest(account: _Account, txn_id: str, action: str) -> dict[str, Any] | None:
        """The newest approved adjustment of ``txn_id`` with ``action``."""
        found = [
            a
            for a in account.adjustments.values()
            if a["transaction_id"] == txn_id and a["action"] == action and a["status"] == "approved"
        ]
        return found[-1] if found else None

    # --- deliveries -------------------------------------------------------------------

    async def _emit(self, account: _Account, *events: tuple[str, Mapping[str, Any]]) -> None:
        """Record each event (the event stream keeps it whatever becomes of its
        notifications) and send it as ``webhook_faults`` says."""
        for event_type, data in events:
            event = objects.envelope(event_type, copy.deepcopy(dict(data)))
            account.events[event["event_id"]] = event
            verdict = self.webhook_faults.verdict(event_type)
            if verdict == DROP:
                continue
            if verdict == HOLD or self.deliveries_paused:
                self.held.append((account, event))
            else:
                await self._deliver(account, event, missigned=verdict == MISSIGN)

    async def _deliver(
        self, account: _Account, event: dict[str, Any], missigned: bool = False
    ) -> None:
        async with httpx.AsyncClient(timeout=10.0) as client:
            for destination in account.destinations:
                if not destination.takes(event["event_type"]):
                    continue
                notification = objects.redelivered(event)
                body = objects.body_of(notification)
                status = 0
                for _ in range(DELIVERY_RETRIES + 1):
                    # each attempt signed afresh: Paddle's SDK allows a 5 second drift
                    secret = WRONG_SECRET if missigned else destination.secret
                    headers = self.sign_headers(secret, body)
                    try:
                        answer = await client.post(destination.url, content=body, headers=headers)
                        status = answer.status_code
                    except httpx.HTTPError:
                        status = 0
                    if 200 <= status < 300:
                        break
                    await trio.sleep(0.05)
                self.delivered.append((notification, destination.url, status))

    # --- HTTP -------------------------------------------------------------------------

    def _build_app(self) -> QuartTrio:
        app = QuartTrio(__name__)
        app.register_error_handler(PaddleError, _render_error)
        app.before_request(self._gate)
        route = app.add_url_rule
        route("/transactions", view_func=self._create_transaction, methods=["POST"])
        route("/transactions", view_func=self._list_transactions)
        route("/transactions/<txn_id>", view_func=self._get_transaction)
        route("/transactions/<txn_id>", view_func=self._patch_transaction, methods=["PATCH"])
        route("/adjustments", view_func=self._post_adjustment, methods=["POST"])
        route("/adjustments", view_func=self._list_adjustments)
        route("/events", view_func=self._list_events)
        route("/subscriptions/<sub_id>", view_func=self._get_subscription)
        route(
            "/customers/<customer_id>/portal-sessions",
            view_func=self._create_portal_session,
            methods=["POST"],
        )
        route("/pay", view_func=self._payment_link)
        route("/checkout/<txn_id>", view_func=self._checkout_page)
        route("/checkout/<txn_id>", view_func=self._checkout_act, methods=["POST"])
        route("/portal/<session_id>", view_func=self._portal_page)
        route("/portal/<session_id>", view_func=self._portal_act, methods=["POST"])
        return app

    async def _gate(self) -> None:
        # read every body before answering: one left unread on a kept-alive connection has
        # been seen to leave the client's next request there without an answer
        await request.get_data()
        api = ("/transactions", "/customers", "/adjustments", "/events", "/subscriptions")
        if not request.path.startswith(api):
            return
        if self.rate_limited_requests:
            self.rate_limited_requests -= 1
            raise _too_many(self.retry_after_s)
        if self.fail_next_requests:
            self.fail_next_requests -= 1
            raise PaddleError(503, "service_unavailable", "Simulated failure (fail_next_requests).")

    def _caller(self) -> _Account:
        scheme, _, key = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not key.strip():
            raise PaddleError(
                401, "authentication_missing", "Authentication header missing or malformed"
            )
        if request.headers.get("Paddle-Version") != "1":
            raise PaddleError(400, "invalid_paddle_version", "The Paddle-Version header must be 1.")
        return self._account(key.strip())

    async def _json(self) -> dict[str, Any]:
        raw = await request.get_data()
        try:
            body = json.loads(raw) if raw.strip() else {}
        except ValueError:
            raise PaddleError(
                400, "bad_request", "Invalid request: the body is not JSON."
            ) from None
        if not isinstance(body, dict):
            raise PaddleError(400, "bad_request", "Invalid request: the body is not an object.")
        return body

    async def _create_transaction(self) -> Any:
        account = self._caller()
        body = await self._json()
        items = body.get("items")
        if not isinstance(items, list) or not 1 <= len(items) <= 100:
            raise _invalid("items", "between 1 and 100 items are required")
        at = objects.now_iso()
        lines = [_line(account, item, n, at) for n, item in enumerate(items)]
        currencies = {p["unit_price"]["currency_code"] for p, _, _ in lines}
        currency = body.get("currency_code") or next(iter(currencies))
        if currency not in CURRENCIES or currencies != {currency}:
            raise _invalid("currency_code", "every price must be in the transaction's currency")
        cycles = {
            json.dumps(p["billing_cycle"], sort_keys=True)
            for p, _, _ in lines
            if p["billing_cycle"]
        }
        if len(cycles) > 1:
            raise _invalid("items", "recurring prices must share one billing cycle")
        custom = body.get("custom_data")
        if custom is not None and not isinstance(custom, dict):
            raise _invalid("custom_data", "must be an object")
        txn = objects.transaction(self.url, lines, currency, custom)
        account.transactions[txn["id"]] = txn
        await self._emit(account, ("transaction.created", txn))
        return {"data": txn, "meta": objects.meta()}, 201

    async def _get_transaction(self, txn_id: str) -> Any:
        txn = self._caller().transactions.get(txn_id)
        if txn is None:
            raise _not_found(txn_id)
        return {"data": txn, "meta": objects.meta()}

    async def _patch_transaction(self, txn_id: str) -> Any:
        """Cancel (``{"status": "canceled"}`` and nothing else:
        ``transaction_cannot_be_modified_and_canceled``), or replace ``custom_data`` of an open
        transaction. The simulator updates no other field."""
        account = self._caller()
        body = await self._json()
        txn = account.transactions.get(txn_id)
        if txn is None:
            raise _not_found(txn_id)
        if "status" in body:
            if body["status"] != "canceled":
                raise _invalid("status", "the simulator sets a transaction only to canceled")
            if set(body) != {"status"}:
                raise PaddleError(
                    400,
                    "transaction_cannot_be_modified_and_canceled",
                    "Cannot update transaction to canceled, along with other fields at the"
                    " same time",
                )
            await self._cancel(account, txn)
        else:
            others = set(body) - {"custom_data"}
            if others:
                raise _invalid(sorted(others)[0], "the simulator updates only custom_data")
            custom = body.get("custom_data")
            if custom is not None and not isinstance(custom, dict):
                raise _invalid("custom_data", "must be an object")
            await self._update(account, txn, {"custom_data": custom})
        return {"data": txn, "meta": objects.meta()}

    async def _post_adjustment(self) -> Any:
        account = self._caller()
        made = await self._create_adjustment(account, await self._json())
        return {"data": made, "meta": objects.meta()}, 201

    async def _list_transactions(self) -> Any:
        """``GET /transactions`` (openapi.yaml list-transactions): the account's transactions,
        filtered by ``id``, ``status`` and ``origin`` (comma-separated lists) and by
        ``created_at`` (``lists.dated``), 30 a page (``per_page_transaction_query``: at most
        30)."""
        account = self._caller()
        query = dict(request.args)
        kept = lists.matching(
            list(account.transactions.values()),
            query,
            {
                "id": lambda t: t["id"],
                "status": lambda t: t["status"],
                "origin": lambda t: t["origin"],
            },
        )
        try:
            kept = lists.dated(kept, query, "created_at")
        except lists.BadQuery as bad:
            raise _invalid(bad.field, str(bad)) from None
        return self._page(kept, query, lambda t: str(t["id"]), lists.TRANSACTIONS, "/transactions")

    async def _list_adjustments(self) -> Any:
        """``GET /adjustments`` (openapi.yaml list-adjustments): the account's adjustments,
        filtered by ``action`` (one), ``transaction_id``, ``customer_id``, ``subscription_id``,
        ``id`` and ``status`` (comma-separated lists), newest first unless ``order_by`` says
        otherwise, 10 a page (at most 50)."""
        account = self._caller()
        query = dict(request.args)
        if query.get("action") and "," in query["action"]:
            raise _invalid("action", "one action")
        kept = lists.matching(
            list(account.adjustments.values()),
            query,
            {
                "action": lambda a: a["action"],
                "transaction_id": lambda a: a["transaction_id"],
                "customer_id": lambda a: a["customer_id"],
                "subscription_id": lambda a: a["subscription_id"],
                "id": lambda a: a["id"],
                "status": lambda a: a["status"],
            },
        )
        return self._page(kept, query, lambda a: str(a["id"]), lists.ADJUSTMENTS, "/adjustments")

    async def _list_events(self) -> Any:
        """``GET /events`` (openapi.yaml list-events): the account's events, as event entities
        (``event_id``, ``event_type``, ``occurred_at``, ``data``: schema ``event``, no
        ``notification_id``), ``event_type`` a comma-separated filter, newest first unless
        ``order_by`` says otherwise, 50 a page (at most 200). The simulator keeps them all
        (Paddle keeps 90 days)."""
        account = self._caller()
        query = dict(request.args)
        kept = lists.matching(
            [
                {k: e[k] for k in ("event_id", "event_type", "occurred_at", "data")}
                for e in account.events.values()
            ],
            query,
            {"event_type": lambda e: e["event_type"]},
        )
        return self._page(kept, query, lambda e: str(e["event_id"]), lists.EVENTS, "/events")

    def _page(
        self,
        kept: list[Mapping[str, Any]],
        query: dict[str, str],
        id_of: Callable[[Mapping[str, Any]], str],
        limits: lists.Limits,
        path: str,
    ) -> Any:
        """One page of ``kept`` in Paddle's list envelope (``meta.pagination``); a query Paddle
        would refuse is its ``invalid_field``."""
        try:
            taken, pagination = lists.page(kept, query, id_of, limits, self.url + path)
        except lists.BadQuery as bad:
            raise _invalid(bad.field, str(bad)) from None
        return {"data": taken, "meta": {**objects.meta(), "pagination": pagination}}

    async def _get_subscription(self, sub_id: str) -> Any:
        """``GET /subscriptions/{id}`` (openapi.yaml get-subscription): the entity, without
        the ``include`` extras (``next_transaction``, ``recurring_transaction_details``)."""
        sub = self._caller().subscriptions.get(sub_id)
        if sub is None:
            raise _not_found(sub_id)
        return {"data": sub, "meta": objects.meta()}

    async def _create_portal_session(self, customer_id: str) -> Any:
        account = self._caller()
        body = await self._json()
        if customer_id not in account.customers:
            raise _not_found(customer_id)
        wanted = body.get("subscription_ids") or []
        if not isinstance(wanted, list) or len(wanted) > 25:
            raise _invalid("subscription_ids", "a list of at most 25 subscription ids")
        for sub_id in wanted:
            sub = account.subscriptions.get(sub_id) if isinstance(sub_id, str) else None
            if sub is None or sub["customer_id"] != customer_id:
                raise _invalid(
                    "subscription_ids", f"{sub_id} is not a subscription of {customer_id}"
                )
        session = objects.portal_session(self.url, customer_id, list(wanted))
        account.portals[session["id"]] = customer_id
        return {"data": session, "meta": objects.meta()}, 201

    # --- the buyer's pages --------------------------------------------------------------

    def _page_transaction(self, txn_id: str) -> tuple[_Account, dict[str, Any]]:
        try:
            return self._find("transactions", txn_id)
        except KeyError:
            raise _not_found(txn_id) from None

    async def _payment_link(self) -> Any:
        return await self._checkout_page(request.args.get("_ptxn", ""))

    async def _checkout_page(self, txn_id: str) -> Any:
        _, txn = self._page_transaction(txn_id)
        return _html(pages.checkout_page(txn, _onward(request.args)))

    async def _checkout_act(self, txn_id: str) -> Any:
        form = await request.form
        _, txn = self._page_transaction(txn_id)
        onward = _onward(form)
        action = form.get("action")
        try:
            if action == "pay":
                await self.pay(txn_id)
                target = onward.get("success_url")
                return _see_other(target) if target else _html(pages.done_page(txn))
            if action == "decline":
                await self.decline(txn_id)
                return _html(pages.checkout_page(txn, onward, "Your card was declined."))
        except PaddleError as refused:
            return _html(pages.checkout_page(txn, onward, refused.detail))
        target = onward.get("close_url")
        return _see_other(target) if target else _html(pages.closed_page())

    def _portal(self, session_id: str) -> tuple[_Account, str]:
        for account in self._accounts.values():
            if session_id in account.portals:
                return account, account.portals[session_id]
        raise _not_found(session_id)

    async def _portal_page(self, session_id: str) -> Any:
        account, customer = self._portal(session_id)
        subs = [s for s in account.subscriptions.values() if s["customer_id"] == customer]
        return _html(pages.portal_page(session_id, subs))

    async def _portal_act(self, session_id: str) -> Any:
        form = await request.form
        account, customer = self._portal(session_id)
        sub = account.subscriptions.get(str(form.get("subscription_id")))
        mine = sub is not None and sub["customer_id"] == customer
        if (
            form.get("action") == "cancel_subscription"
            and sub
            and mine
            and sub["status"] != "canceled"
        ):
            await self.cancel_subscription(sub["id"])
        return await self._portal_page(session_id)


def _notified(account: _Account, adjustment: dict[str, Any]) -> dict[str, Any]:
    """An adjustment as its notifications show it: ``type`` null where the simulator was asked
    to show it so (the notification schema allows null, openapi.yaml ``adjustment.created``;
    the API entity's ``type`` is ``adjustment_type``, never null)."""
    if adjustment["id"] in account.null_typed:
        return {**adjustment, "type": None}
    return adjustment


def _line(
    account: _Account, item: Any, n: int, at: str
) -> tuple[dict[str, Any], dict[str, Any], int]:
    """A requested item as (price, product, quantity): a price of the account's catalog
    (``price_id``), or a non-catalog price with its product, checked as openapi.yaml's
    ``transaction-price-create-base`` and ``transaction-subscription-product-create`` say
    (description 2 to 500 characters, name 1 to 150; product name 1 to 200)."""
    where = f"items[{n}]"
    if not isinstance(item, dict):
        raise _invalid(where, "must be an object")
    quantity = item.get("quantity")
    if not isinstance(quantity, int) or isinstance(quantity, bool) or quantity < 1:
        raise _invalid(f"{where}.quantity", "a whole number of at least 1")
    if isinstance(item.get("price_id"), str):
        found = account.catalog.get(item["price_id"])
        if found is None:
            raise _not_found(item["price_id"])
        limits = found[0]["quantity"]
        if not limits["minimum"] <= quantity <= limits["maximum"]:
            raise _invalid(f"{where}.quantity", "outside the price's quantity range")
        return copy.deepcopy(found[0]), copy.deepcopy(found[1]), quantity
    given = item.get("price")
    if not isinstance(given, dict):
        raise _invalid(f"{where}.price", "a price_id or a price is required")
    _text(given.get("description"), f"{where}.price.description", 2, 500)
    if given.get("name") is not None:
        _text(given.get("name"), f"{where}.price.name", 1, 150)
    unit = given.get("unit_price")
    if (
        not isinstance(unit, dict)
        or unit.get("currency_code") not in CURRENCIES
        or not isinstance(unit.get("amount"), str)
        or not _AMOUNT.fullmatch(unit["amount"])
    ):
        raise _invalid(f"{where}.price.unit_price", "an integer amount string and a currency")
    limits = given.get("quantity") or {"minimum": 1, "maximum": 100}
    if not isinstance(limits, dict) or not limits.get("minimum", 1) <= quantity <= limits.get(
        "maximum", 100
    ):
        raise _invalid(f"{where}.quantity", "outside the price's quantity range")
    cycle = given.get("billing_cycle")
    if cycle is not None and (
        not isinstance(cycle, dict)
        or cycle.get("interval") not in INTERVALS
        or not isinstance(cycle.get("frequency"), int)
    ):
        raise _invalid(f"{where}.price.billing_cycle", "interval and frequency")
    made = given.get("product")
    if not isinstance(made, dict):
        raise _invalid(f"{where}.price.product", "a product (the simulator keeps no product ids)")
    _text(made.get("name"), f"{where}.price.product.name", 1, 200)
    item_product = objects.product(made, at)
    return objects.price(given, item_product["id"], at), item_product, quantity


def _text(value: Any, field: str, shortest: int, longest: int) -> None:
    """A string of ``shortest`` to ``longest`` characters, else Paddle's validation error
    (its messages read "max length of 200 exceeded, provided value length 220", openapi.yaml
    ``error``)."""
    if not isinstance(value, str):
        raise _invalid(field, "must be provided as part of the request")
    if len(value) < shortest:
        raise _invalid(
            field, f"min length of {shortest} required, provided value length {len(value)}"
        )
    if len(value) > longest:
        raise _invalid(
            field, f"max length of {longest} exceeded, provided value length {len(value)}"
        )


def _custom_data(value: Any, field: str) -> dict[str, Any]:
    """Paddle.js's ``customData``: "Must be valid JSON and contain at least one key"."""
    if not isinstance(value, Mapping) or not value:
        raise _invalid(field, "must be an object with at least one key")
    return json.loads(json.dumps(dict(value)))


def _onward(values: Mapping[str, str]) -> dict[str, str]:
    """The addresses the checkout sends the buyer on to (Paddle.js's ``successUrl``, and where
    closing goes), when given as http(s) addresses."""
    return {
        k: str(values[k])
        for k in ("success_url", "close_url")
        if values.get(k) and urlsplit(str(values[k])).scheme in ("http", "https")
    }


async def _render_error(error: PaddleError) -> tuple[dict[str, Any], int, dict[str, str]]:
    # async: Quart runs a plain function in an asyncio executor, which trio does not have
    body, status = objects.error(error.status, error.code, error.detail, error.errors)
    return body, status, error.headers


def _html(text: str) -> Response:
    return Response(text, content_type="text/html; charset=utf-8")


def _see_other(url: str) -> Response:
    return Response(b"", status=303, headers={"Location": url})
