"""A loopback Paddle Billing: the API subset the node calls, the card form that stands in for
Paddle.js's overlay, the customer portal, and notifications signed as Paddle signs them.

State is in memory, per account: an account is an API key, made on its first use. Every API
call needs ``Authorization: Bearer <key>`` and ``Paddle-Version: 1``; entities of another
account are not found.

API (JSON in and out, answers in Paddle's ``{"data", "meta"}`` envelope, refusals in its
``{"error", "meta"}`` shape): ``POST /transactions`` (non-catalog prices),
``GET /transactions/{id}``, ``POST /customers/{id}/portal-sessions``. Pages: the checkout
(``checkout.url``, ``/pay?_ptxn=`` as Paddle's default payment link, and ``/checkout/{id}``)
with Pay, Decline and Close; the portal (``/portal/{session}``) with Cancel.

Notifications: each event goes to every destination of the account that takes its type, as
its own notification (a fresh ``notification_id``, the same ``event_id``), in order, each
awaited before the action answers, with a few quick retries; every attempt is signed afresh
(``Paddle-Signature: ts=..;h1=..``). Outcomes are appended to ``delivered``. With
``deliveries_paused`` the events wait in ``held`` until ``release_held()``.
"""

from __future__ import annotations

import copy
import json
import re
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx
import trio
from quart import Response, request
from quart_trio import QuartTrio

from edge.providers.paddle.money import CURRENCIES
from edge.providers.paddle.signature import sign_header
from edge.sim.loopback import LoopbackServer
from edge.sim.paddle import objects, pages

DELIVERY_RETRIES = 3
INTERVALS = frozenset({"day", "week", "month", "year"})
_AMOUNT = re.compile(r"0|[1-9][0-9]{0,17}")


class PaddleError(Exception):
    """An API answer in Paddle's error shape."""

    def __init__(self, status: int, code: str, detail: str) -> None:
        super().__init__(detail)
        self.status, self.code, self.detail = status, code, detail


def _invalid(detail: str) -> PaddleError:
    return PaddleError(400, "invalid_field", detail)


def _not_found(what: str) -> PaddleError:
    return PaddleError(404, "not_found", f"Entity {what} not found")


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
    refunded: dict[str, int] = field(default_factory=dict)  # txn id -> minor units
    destinations: list[_Destination] = field(default_factory=list)
    events: dict[str, dict[str, Any]] = field(default_factory=dict)  # event id -> event
    portals: dict[str, str] = field(default_factory=dict)  # session id -> customer id


class PaddleSimulator(LoopbackServer):
    """Run it in a nursery: ``url = await nursery.start(sim.run)``; ``stop()`` ends it. Tests may
    set ``fail_next_requests`` (the next N API calls answer 503) and ``deliveries_paused``."""

    def __init__(self) -> None:
        self.fail_next_requests = 0
        self.deliveries_paused = False
        self.held: list[tuple[_Account, dict[str, Any]]] = []
        # (the notification as delivered, the destination's url, the last attempt's status)
        self.delivered: list[tuple[dict[str, Any], str, int]] = []
        self._accounts: dict[str, _Account] = {}
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
        return {
            "Content-Type": "application/json",
            "Paddle-Signature": sign_header(secret, body, int(time.time())),
        }

    def transaction(self, txn_id: str) -> dict[str, Any]:
        return self._find("transactions", txn_id)[1]

    def subscription(self, sub_id: str) -> dict[str, Any]:
        return self._find("subscriptions", sub_id)[1]

    def transaction_of(self, tx_id: str) -> str:
        """The checkout transaction whose ``custom_data.txId`` is ``tx_id``."""
        for account in self._accounts.values():
            for txn_id, txn in account.transactions.items():
                custom = txn.get("custom_data") or {}
                if custom.get("txId") == tx_id and txn["origin"] in ("api", "web"):
                    return txn_id
        raise KeyError(tx_id)

    def subscription_of(self, tx_id: str) -> str:
        """The subscription whose ``custom_data.txId`` is ``tx_id``."""
        for account in self._accounts.values():
            for sub_id, sub in account.subscriptions.items():
                if (sub.get("custom_data") or {}).get("txId") == tx_id:
                    return sub_id
        raise KeyError(tx_id)

    async def pay(self, txn_id: str) -> None:
        """The buyer pays: ``transaction.paid``; for a recurring price, the subscription
        (``subscription.created``, ``subscription.activated``); ``transaction.completed``."""
        account, txn = self._find("transactions", txn_id)
        if txn["status"] not in ("draft", "ready"):
            return
        self._attach_customer(account, txn)
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
            return
        self._attach_customer(account, txn)
        txn["payments"].insert(0, objects.payment_attempt(txn, declined=True))
        txn["updated_at"] = objects.now_iso()
        await self._emit(account, ("transaction.payment_failed", txn))

    async def cancel_transaction(self, txn_id: str) -> None:
        """The merchant cancels an unpaid transaction: ``transaction.canceled``."""
        account, txn = self._find("transactions", txn_id)
        if txn["status"] not in ("draft", "ready"):
            raise ValueError(f"{txn_id} is {txn['status']}: only draft or ready can be canceled")
        txn.update(status="canceled", updated_at=objects.now_iso())
        await self._emit(account, ("transaction.canceled", txn))

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

    async def refund(self, txn_id: str, amount: int | None = None) -> str:
        """A refund of all (``amount`` None) or part of a completed transaction:
        ``adjustment.created`` (pending_approval), then ``adjustment.updated`` once Paddle
        approves it. Returns the adjustment's id."""
        account, txn = self._find("transactions", txn_id)
        left = objects.total_of(txn) - account.refunded.get(txn_id, 0)
        if txn["status"] != "completed" or left <= 0:
            raise ValueError(f"{txn_id} has nothing left to refund")
        if amount is not None and not 0 < amount <= left:
            raise ValueError(f"a refund of {txn_id} must be between 1 and {left}")
        adjustment = objects.adjustment(
            txn, "refund", amount, "Refund requested", "pending_approval"
        )
        account.refunded[txn_id] = account.refunded.get(txn_id, 0) + (amount or left)
        await self._emit(account, ("adjustment.created", adjustment))
        adjustment.update(status="approved", updated_at=objects.now_iso())
        await self._emit(account, ("adjustment.updated", adjustment))
        return str(adjustment["id"])

    async def chargeback(self, txn_id: str) -> str:
        """The buyer's bank takes the payment back: ``adjustment.created``, action chargeback."""
        return await self._adjust(txn_id, "chargeback", "Chargeback raised by the card issuer")

    async def chargeback_reverse(self, txn_id: str) -> str:
        """The chargeback is decided for the merchant: ``adjustment.created``, action
        chargeback_reverse."""
        return await self._adjust(txn_id, "chargeback_reverse", "Chargeback reversed")

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

    async def release_held(self) -> None:
        """Deliver what waited while ``deliveries_paused`` was set, in order."""
        held, self.held = self.held, []
        for account, event in held:
            await self._deliver(account, event)

    # --- state ------------------------------------------------------------------------

    def _account(self, api_key: str) -> _Account:
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

    async def _adjust(self, txn_id: str, action: str, reason: str) -> str:
        account, txn = self._find("transactions", txn_id)
        if txn["status"] != "completed":
            raise ValueError(f"{txn_id} is {txn['status']}, not completed")
        adjustment = objects.adjustment(txn, action, None, reason, "approved")
        await self._emit(account, ("adjustment.created", adjustment))
        return str(adjustment["id"])

    # --- deliveries -------------------------------------------------------------------

    async def _emit(self, account: _Account, *events: tuple[str, Mapping[str, Any]]) -> None:
        for event_type, data in events:
            event = objects.envelope(event_type, copy.deepcopy(dict(data)))
            account.events[event["event_id"]] = event
            if self.deliveries_paused:
                self.held.append((account, event))
            else:
                await self._deliver(account, event)

    async def _deliver(self, account: _Account, event: dict[str, Any]) -> None:
        async with httpx.AsyncClient(timeout=10.0) as client:
            for destination in account.destinations:
                if not destination.takes(event["event_type"]):
                    continue
                notification = objects.redelivered(event)
                body = objects.body_of(notification)
                status = 0
                for _ in range(DELIVERY_RETRIES + 1):
                    # each attempt signed afresh: Paddle's SDK allows a 5 second drift
                    headers = self.sign_headers(destination.secret, body)
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
        route("/transactions/<txn_id>", view_func=self._get_transaction)
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
        if request.path.startswith(("/transactions", "/customers")) and self.fail_next_requests:
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
            raise _invalid("items: between 1 and 100 items are required")
        at = objects.now_iso()
        lines = [_line(item, n, at) for n, item in enumerate(items)]
        currencies = {p["unit_price"]["currency_code"] for p, _, _ in lines}
        currency = body.get("currency_code") or next(iter(currencies))
        if currency not in CURRENCIES or currencies != {currency}:
            raise _invalid("currency_code: every price must be in the transaction's currency")
        cycles = {
            json.dumps(p["billing_cycle"], sort_keys=True)
            for p, _, _ in lines
            if p["billing_cycle"]
        }
        if len(cycles) > 1:
            raise _invalid("items: recurring prices must share one billing cycle")
        custom = body.get("custom_data")
        if custom is not None and not isinstance(custom, dict):
            raise _invalid("custom_data: must be an object")
        txn = objects.transaction(self.url, lines, currency, custom)
        account.transactions[txn["id"]] = txn
        await self._emit(account, ("transaction.created", txn))
        return {"data": txn, "meta": objects.meta()}, 201

    async def _get_transaction(self, txn_id: str) -> Any:
        txn = self._caller().transactions.get(txn_id)
        if txn is None:
            raise _not_found(txn_id)
        return {"data": txn, "meta": objects.meta()}

    async def _create_portal_session(self, customer_id: str) -> Any:
        account = self._caller()
        body = await self._json()
        if customer_id not in account.customers:
            raise _not_found(customer_id)
        wanted = body.get("subscription_ids") or []
        if not isinstance(wanted, list) or len(wanted) > 25:
            raise _invalid("subscription_ids: a list of at most 25 subscription ids")
        for sub_id in wanted:
            sub = account.subscriptions.get(sub_id) if isinstance(sub_id, str) else None
            if sub is None or sub["customer_id"] != customer_id:
                raise _invalid(f"subscription_ids: {sub_id} is not a subscription of {customer_id}")
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
        if action == "pay":
            await self.pay(txn_id)
            target = onward.get("success_url")
            return _see_other(target) if target else _html(pages.done_page(txn))
        if action == "decline":
            await self.decline(txn_id)
            return _html(pages.checkout_page(txn, onward, "Your card was declined."))
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


def _line(item: Any, n: int, at: str) -> tuple[dict[str, Any], dict[str, Any], int]:
    """A requested item as (price, product, quantity): non-catalog prices only."""
    where = f"items[{n}]"
    if not isinstance(item, dict):
        raise _invalid(f"{where}: must be an object")
    quantity = item.get("quantity")
    given = item.get("price")
    if isinstance(item.get("price_id"), str):
        raise _not_found(item["price_id"])  # the simulator keeps no catalog
    if not isinstance(quantity, int) or isinstance(quantity, bool) or quantity < 1:
        raise _invalid(f"{where}.quantity: a whole number of at least 1")
    if not isinstance(given, dict) or not isinstance(given.get("description"), str):
        raise _invalid(f"{where}.price: a price with a description is required")
    unit = given.get("unit_price")
    if (
        not isinstance(unit, dict)
        or unit.get("currency_code") not in CURRENCIES
        or not isinstance(unit.get("amount"), str)
        or not _AMOUNT.fullmatch(unit["amount"])
    ):
        raise _invalid(f"{where}.price.unit_price: an integer amount string and a currency")
    limits = given.get("quantity") or {"minimum": 1, "maximum": 100}
    if not isinstance(limits, dict) or not limits.get("minimum", 1) <= quantity <= limits.get(
        "maximum", 100
    ):
        raise _invalid(f"{where}.quantity: outside the price's quantity range")
    cycle = given.get("billing_cycle")
    if cycle is not None and (
        not isinstance(cycle, dict)
        or cycle.get("interval") not in INTERVALS
        or not isinstance(cycle.get("frequency"), int)
    ):
        raise _invalid(f"{where}.price.billing_cycle: interval and frequency")
    made = given.get("product")
    if not isinstance(made, dict) or not isinstance(made.get("name"), str):
        raise _invalid(f"{where}.price.product: a product with a name (no catalog product ids)")
    item_product = objects.product(made, at)
    return objects.price(given, item_product["id"], at), item_product, quantity


def _onward(values: Mapping[str, str]) -> dict[str, str]:
    """The addresses the checkout sends the buyer on to (Paddle.js's ``successUrl``, and where
    closing goes), when given as http(s) addresses."""
    return {
        k: str(values[k])
        for k in ("success_url", "close_url")
        if values.get(k) and urlsplit(str(values[k])).scheme in ("http", "https")
    }


async def _render_error(error: PaddleError) -> tuple[dict[str, Any], int]:
    # async: Quart runs a plain function in an asyncio executor, which trio does not have
    return objects.error(error.status, error.code, error.detail)


def _html(text: str) -> Response:
    return Response(text, content_type="text/html; charset=utf-8")


def _see_other(url: str) -> Response:
    return Response(b"", status=303, headers={"Location": url})
