"""A loopback BTCPay Server: the Greenfield invoice API the node calls, the buyer's invoice page,
and webhooks delivered as BTCPay delivers them.

State is in memory, per store: a store has one API key (``Authorization: token <key>``), its
invoices, its webhooks and their deliveries.

API (Greenfield's JSON and error shapes): ``POST /api/v1/stores/{storeId}/invoices``,
``GET .../invoices/{invoiceId}``, ``POST .../invoices/{invoiceId}/status`` (mark Settled or
Invalid by hand, in the states BTCPay allows), ``POST /api/v1/invoices/{invoiceId}/refund`` (a
pull payment the buyer claims, and ``InvoiceRefund``), ``POST
.../webhooks/{webhookId}/deliveries/{deliveryId}/redeliver``, ``GET
.../webhooks/{webhookId}/deliveries``. Pages: ``/i/{invoiceId}``, and a store's Point of Sale
apps, ``POST /apps/{appId}/pos``: anyone may create an invoice there, with an ``orderId`` of
their choosing (``UIPointOfSaleController.ViewPointOfSale``), which the store's webhooks then
report like any other invoice.

Deliveries (``WebhookSender.cs``): bodies are indented JSON signed ``BTCPay-Sig:
sha256=<hmac>``; each webhook sends in order, a failing delivery holding back the next; a
delivery answered 5xx, 408, 429 or not at all is retried after ``retry_delays_s`` (10 s, 1 min,
then 6 x 10 min), each retry a new delivery (new ``deliveryId``, the first one's
``originalDeliveryId``, ``isRedelivery: true``, the first one's ``timestamp``); any other 4xx is
final. A manual redelivery is a new delivery too, signed with the webhook's current secret.
"""

from __future__ import annotations

import json
import logging
import math
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from functools import partial
from typing import Any

import httpx
import trio
from quart import Response, request
from quart_trio import QuartTrio

from edge.domain.money import EXPONENTS
from edge.providers.btcpay.signature import sign_header
from edge.sim.btcpay import objects, pages
from edge.sim.loopback import LoopbackServer

RETRY_DELAYS_S = (10.0, 60.0, *([600.0] * 6))
MONITORING_S = 86400
MARK_REFUSED = "Status can only be marked to invalid or settled within certain conditions."
POS_VIEWS = ("Static", "Cart", "Light", "Print")
log = logging.getLogger(__name__)


class GreenfieldError(ValueError):
    """An API answer in Greenfield's error shape: ``{code, message}``, or for a request that
    does not validate, a list of ``{path, message}`` with 422."""

    def __init__(self, status: int, code: str, message: str, path: str | None = None) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.path = status, code, message, path

    def response(self) -> tuple[Any, int]:
        if self.path is not None:
            return [{"path": self.path, "message": self.message}], self.status
        return {"code": self.code, "message": self.message}, self.status


def _invalid(path: str, message: str) -> GreenfieldError:
    return GreenfieldError(422, "validation-error", message, path)


@dataclass
class _Webhook:
    id: str
    url: str
    secret: str
    automatic_redelivery: bool = True
    queue: list[dict[str, Any]] = field(default_factory=list)  # deliveries not yet sent
    wake: trio.Event = field(default_factory=trio.Event)


@dataclass
class _Invoice:
    data: dict[str, Any]
    amount_minor: int
    paid_minor: int = 0
    payments: list[dict[str, Any]] = field(default_factory=list)
    app_id: str | None = None  # made by a Point of Sale app, not the Greenfield API


@dataclass
class _PosApp:
    """A Point of Sale app's settings (``PointOfSaleSettings``): its currency, its items (id ->
    (title, price in minor units)), the view a bare address shows, and whether the buyer may
    type an amount of their own."""

    id: str
    store_id: str
    currency: str
    items: dict[str, tuple[str, int]]
    default_view: str
    show_custom_amount: bool


@dataclass
class _Store:
    id: str
    api_key: str
    invoices: dict[str, _Invoice] = field(default_factory=dict)
    webhooks: dict[str, _Webhook] = field(default_factory=dict)
    deliveries: dict[str, dict[str, Any]] = field(default_factory=dict)  # id -> record
    apps: dict[str, _PosApp] = field(default_factory=dict)


class BTCPaySimulator(LoopbackServer):
    """Run it in a nursery: ``url = await nursery.start(sim.run)``; ``stop()`` ends it. Tests may
    set ``retry_delays_s`` (shorter waits), ``clock_offset_s`` (a later "now" for the next
    events) and ``fail_next_requests`` (the next N API calls answer 503)."""

    def __init__(self, retry_delays_s: tuple[float, ...] = RETRY_DELAYS_S) -> None:
        self.retry_delays_s = retry_delays_s
        self.clock_offset_s = 0
        self.fail_next_requests = 0
        # (the delivery's body as sent, the webhook's url, the answer's status; 0: no answer)
        self.delivered: list[tuple[dict[str, Any], str, int]] = []
        self._stores: dict[str, _Store] = {}
        self._pending = 0
        self._idle = trio.Event()
        self._idle.set()
        self._nursery: trio.Nursery | None = None
        super().__init__(self._build_app())

    async def run(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Serve, and send every webhook's deliveries, until ``stop()``."""
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            for store in self._stores.values():
                for webhook in store.webhooks.values():
                    nursery.start_soon(self._sender, store, webhook)
            url = await nursery.start(partial(LoopbackServer.run, self, host=host, port=port))
            task_status.started(url)
            await self._stop.wait()
            nursery.cancel_scope.cancel()

    # --- Python API for tests and the demo ----------------------------------------------

    def register_store(self, api_key: str, store_id: str | None = None) -> str:
        """A store reached with ``api_key``; returns its id."""
        store = _Store(store_id or objects.btcpay_id(44), api_key)
        self._stores[store.id] = store
        return store.id

    def register_webhook(
        self, store_id: str, url: str, secret: str | None = None, automatic_redelivery: bool = True
    ) -> tuple[str, str]:
        """A webhook of the store to ``url``, sending every event; returns (id, secret)."""
        store = self._stores[store_id]
        webhook = _Webhook(
            objects.btcpay_id(), url, secret or objects.btcpay_id(), automatic_redelivery
        )
        store.webhooks[webhook.id] = webhook
        if self._nursery is not None:
            self._nursery.start_soon(self._sender, store, webhook)
        return webhook.id, webhook.secret

    def invoice(self, invoice_id: str) -> dict[str, Any]:
        return self._find(invoice_id)[1].data

    def register_pos_app(
        self,
        store_id: str,
        currency: str = "EUR",
        items: Mapping[str, tuple[str, int]] | None = None,
        default_view: str = "Light",
        show_custom_amount: bool = False,
    ) -> str:
        """A Point of Sale app of the store (``items``: id -> (title, price in minor units));
        returns its id. The default view, Light, is BTCPay's keypad: any ``amount``."""
        currency = currency.upper()
        if currency not in EXPONENTS:
            raise ValueError(f"unknown currency {currency}")
        app = _PosApp(
            objects.btcpay_id(),
            store_id,
            currency,
            dict(items or {}),
            default_view,
            show_custom_amount,
        )
        self._stores[store_id].apps[app.id] = app
        return app.id

    def invoice_of(self, tx_id: str) -> str:
        """The invoice made through the Greenfield API whose ``metadata.orderId`` is ``tx_id``
        (a Point of Sale invoice may carry the same orderId: it is not the one)."""
        for store in self._stores.values():
            for invoice_id, inv in store.invoices.items():
                if inv.app_id is None and inv.data["metadata"].get("orderId") == tx_id:
                    return invoice_id
        raise KeyError(tx_id)

    def now(self) -> int:
        return int(time.time()) + self.clock_offset_s

    async def drained(self) -> None:
        """Wait until every delivery queued so far was answered for good or gave up."""
        await self._idle.wait()

    async def pay(self, invoice_id: str, part: bool = False) -> None:
        """The buyer sends the whole amount, or half of what is due."""
        store, inv = self._find(invoice_id)
        data, now = inv.data, self.now()
        due = inv.amount_minor - inv.paid_minor
        sent = max(due // 2, 1) if part else max(due, 0)
        late = data["status"] == "Expired"
        if data["status"] not in ("New", "Expired") or sent <= 0:
            return
        inv.paid_minor += sent
        payment = objects.payment(_btc(sent, data), now)
        inv.payments.append(payment)
        data["paidAmount"] = _decimal(inv.paid_minor, data["currency"])
        fields = {"afterExpiration": late, "paymentMethodId": "BTC-CHAIN", "payment": payment}
        self._emit(store, "InvoiceReceivedPayment", inv, **fields)
        if inv.paid_minor < inv.amount_minor:
            if not late:
                data["additionalStatus"] = "PaidPartial"
            return
        if late:
            data["additionalStatus"] = "PaidLate"
            self._emit(store, "InvoicePaidAfterExpiration", inv)
            return
        self._move(data, "Processing", "None")
        self._emit(store, "InvoiceProcessing", inv, overPaid=False)

    async def confirm(self, invoice_id: str) -> None:
        """The payments get their confirmations: Processing -> Settled."""
        store, inv = self._find(invoice_id)
        if inv.data["status"] != "Processing":
            return
        for payment in inv.payments:
            if payment["status"] == "Processing":
                payment["status"] = "Settled"
                self._emit(
                    store,
                    "InvoicePaymentSettled",
                    inv,
                    afterExpiration=False,
                    paymentMethodId="BTC-CHAIN",
                    payment=payment,
                )
        self._move(inv.data, "Settled", "None")
        self._emit(store, "InvoiceSettled", inv, manuallyMarked=False, overPaid=False)

    async def invalidate(self, invoice_id: str) -> None:
        """The confirmations never came before the monitoring deadline: Processing -> Invalid."""
        store, inv = self._find(invoice_id)
        if inv.data["status"] != "Processing":
            return
        self._move(inv.data, "Invalid", "None")
        self._emit(store, "InvoiceInvalid", inv, manuallyMarked=False)

    async def expire(self, invoice_id: str) -> None:
        """The invoice's time runs out unpaid (or part paid): New -> Expired."""
        store, inv = self._find(invoice_id)
        if inv.data["status"] != "New":
            return
        partial = inv.paid_minor > 0
        self._move(inv.data, "Expired", "PaidPartial" if partial else "None")
        self._emit(store, "InvoiceExpired", inv, partiallyPaid=partial)
        if partial:
            self._emit(store, "InvoiceExpiredPaidPartial", inv)

    async def replace_payment(self, invoice_id: str) -> None:
        """An RBF replacement leaves the invoice underpaid: Processing -> New, with no event."""
        _, inv = self._find(invoice_id)
        if inv.data["status"] == "Processing":
            inv.paid_minor, inv.payments = 0, []
            inv.data["paidAmount"] = "0"
            self._move(inv.data, "New", "None")

    async def mark(self, invoice_id: str, status: str) -> None:
        """The merchant marks the invoice Settled or Invalid by hand (Greenfield's
        ``POST .../status``); ``GreenfieldError`` (422, as Greenfield answers) from a state
        BTCPay does not allow it in."""
        store, inv = self._find(invoice_id)
        self._mark(store, inv, status)

    async def refund(self, invoice_id: str) -> None:
        """The merchant offers the buyer a refund (a pull payment): ``InvoiceRefund``."""
        store, inv = self._find(invoice_id)
        self._emit(store, "InvoiceRefund", inv)

    def redeliver(self, delivery_id: str) -> str:
        """A manual redelivery of ``delivery_id``; the new delivery's id."""
        for store in self._stores.values():
            if delivery_id in store.deliveries:
                return self._redeliver(store, delivery_id)
        raise KeyError(delivery_id)

    # --- state --------------------------------------------------------------------------

    def _find(self, invoice_id: str) -> tuple[_Store, _Invoice]:
        for store in self._stores.values():
            if invoice_id in store.invoices:
                return store, store.invoices[invoice_id]
        raise KeyError(invoice_id)

    @staticmethod
    def _move(data: dict[str, Any], status: str, additional: str) -> None:
        data["status"], data["additionalStatus"] = status, additional
        data["availableStatusesForManualMarking"] = objects.markable(status, additional)

    def _mark(self, store: _Store, inv: _Invoice, status: str) -> None:
        """``InvoiceRepository.MarkInvoiceStatus`` (btcpayserver@03345c28
        Services/Invoices/InvoiceRepository.cs:630-676): allowed by ``objects.markable``, the
        invoice takes the status with exception status Marked and one event is published,
        which the webhooks send as ``InvoiceSettled`` or ``InvoiceInvalid`` with
        ``manuallyMarked: true`` and nothing else (InvoiceTriggerProvider.cs:152-159; overPaid
        only for an exception status of PaidOver, which Marked replaces). Refused, Greenfield
        answers a validation error on ``Status`` (GreenfieldInvoiceController.cs:242-262)."""
        if status not in inv.data["availableStatusesForManualMarking"]:
            raise GreenfieldError(422, "validation-error", MARK_REFUSED, path="Status")
        self._move(inv.data, status, "Marked")
        if status == "Settled":
            self._emit(store, "InvoiceSettled", inv, manuallyMarked=True, overPaid=False)
        else:
            self._emit(store, "InvoiceInvalid", inv, manuallyMarked=True)

    # --- deliveries ---------------------------------------------------------------------

    def _emit(self, store: _Store, event_type: str, inv: _Invoice, **fields: Any) -> None:
        """Queue ``event_type`` for every webhook of the store: a first delivery each."""
        timestamp = self.now()
        for webhook in store.webhooks.values():
            delivery_id = objects.btcpay_id()
            event = objects.delivery(
                event_type,
                webhook_id=webhook.id,
                delivery_id=delivery_id,
                original_delivery_id=delivery_id,
                is_redelivery=False,
                timestamp=timestamp,
                store_id=store.id,
                invoice_id=inv.data["id"],
                metadata=inv.data["metadata"],
                **json.loads(json.dumps(fields)),
            )
            self._queue(webhook, event)

    def _queue(self, webhook: _Webhook, event: dict[str, Any]) -> None:
        webhook.queue.append(event)
        self._pending += 1
        self._idle = trio.Event() if self._idle.is_set() else self._idle
        webhook.wake.set()

    def _redeliver(self, store: _Store, delivery_id: str) -> str:
        record = store.deliveries[delivery_id]
        webhook = store.webhooks[record["webhookId"]]
        event = dict(record["event"])
        new_id = objects.btcpay_id()
        # "If we redelivered a redelivery, we still want the initial delivery here"
        event.update(
            deliveryId=new_id,
            originalDeliveryId=event.get("originalDeliveryId") or delivery_id,
            isRedelivery=True,
        )
        self._queue(webhook, event)
        return new_id

    async def _sender(self, store: _Store, webhook: _Webhook) -> None:
        """Send the webhook's deliveries one after the other, each with its retries."""
        async with httpx.AsyncClient(timeout=10.0) as client:
            while True:
                if not webhook.queue:
                    webhook.wake = trio.Event()
                    await webhook.wake.wait()
                    continue
                event = webhook.queue.pop(0)
                try:
                    await self._deliver(client, store, webhook, event)
                finally:
                    self._pending -= 1
                    if self._pending == 0:
                        self._idle.set()

    async def _deliver(
        self, client: httpx.AsyncClient, store: _Store, webhook: _Webhook, event: dict[str, Any]
    ) -> None:
        delays = list(self.retry_delays_s)
        while True:
            status = await self._send(client, store, webhook, event)
            retryable = status == 0 or status >= 500 or status in (408, 429)
            if 200 <= status < 300 or not retryable or not webhook.automatic_redelivery:
                return
            if not delays:
                return
            await trio.sleep(delays.pop(0))
            event = {**event, "deliveryId": objects.btcpay_id(), "isRedelivery": True}

    async def _send(
        self, client: httpx.AsyncClient, store: _Store, webhook: _Webhook, event: dict[str, Any]
    ) -> int:
        body = objects.body(event)
        headers = {
            "Content-Type": "application/json",
            "User-Agent": "BTCPayServer",
            # the secret as it is now: a redelivery after a rotation is signed with the new one
            "BTCPay-Sig": sign_header(webhook.secret, body),
        }
        try:
            status = (await client.post(webhook.url, content=body, headers=headers)).status_code
        except httpx.HTTPError:
            status = 0
        store.deliveries[event["deliveryId"]] = {
            "id": event["deliveryId"],
            "webhookId": webhook.id,
            "timestamp": self.now(),
            "httpCode": status or None,
            "status": "HttpSuccess" if 200 <= status < 300 else "HttpError" if status else "Failed",
            "event": event,
        }
        self.delivered.append((event, webhook.url, status))
        return status

    # --- HTTP ---------------------------------------------------------------------------

    def _build_app(self) -> QuartTrio:
        app = QuartTrio(__name__)
        app.register_error_handler(GreenfieldError, _render_error)
        app.before_request(self._gate)
        route = app.add_url_rule
        stores = "/api/v1/stores/<store_id>"
        route(f"{stores}/invoices", view_func=self._create_invoice, methods=["POST"])
        route(f"{stores}/invoices/<invoice_id>", view_func=self._get_invoice)
        route(f"{stores}/invoices/<invoice_id>/status", view_func=self._mark_api, methods=["POST"])
        route("/api/v1/invoices/<invoice_id>/refund", view_func=self._refund_api, methods=["POST"])
        route(f"{stores}/webhooks/<webhook_id>/deliveries", view_func=self._deliveries)
        route(
            f"{stores}/webhooks/<webhook_id>/deliveries/<delivery_id>/redeliver",
            view_func=self._redeliver_api,
            methods=["POST"],
        )
        route("/i/<invoice_id>", view_func=self._page)
        route("/i/<invoice_id>", view_func=self._page_act, methods=["POST"])
        route("/apps/<app_id>/pos", view_func=self._pos, methods=["POST"])
        route("/apps/<app_id>/pos/<view_type>", view_func=self._pos, methods=["POST"])
        return app

    async def _gate(self) -> None:
        # read every body before answering: one left unread on a kept-alive connection has
        # been seen to leave the client's next request there without an answer
        await request.get_data()
        if request.path.startswith("/api/") and self.fail_next_requests > 0:
            self.fail_next_requests -= 1
            raise GreenfieldError(503, "service-unavailable", "Simulated failure.")

    def _store(self, store_id: str) -> _Store:
        scheme, _, key = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() != "token" or not key.strip():
            raise GreenfieldError(
                401, "unauthenticated", "Authentication is required for accessing this endpoint"
            )
        store = self._stores.get(store_id)
        if store is None or not secrets.compare_digest(store.api_key, key.strip()):
            raise GreenfieldError(
                403,
                "missing-permission",
                "Insufficient API Permissions. Please use an API key"
                " with permission: btcpay.store.cancreateinvoice",
            )
        return store

    async def _json(self) -> dict[str, Any]:
        try:
            body = json.loads(await request.get_data())
        except ValueError:
            raise GreenfieldError(400, "invalid-json", "The request body is not JSON.") from None
        if not isinstance(body, dict):
            raise GreenfieldError(400, "invalid-json", "The request body is not a JSON object.")
        return body

    async def _create_invoice(self, store_id: str) -> Any:
        store = self._store(store_id)
        body = await self._json()
        amount, currency = body.get("amount"), body.get("currency")
        if not isinstance(currency, str) or currency.upper() not in EXPONENTS:
            raise _invalid("currency", "Invalid currency")
        currency = currency.upper()
        if not isinstance(amount, str):
            raise _invalid("amount", "Amount should be a string of a decimal number")
        try:
            value = Decimal(amount)
        except InvalidOperation:
            raise _invalid("amount", "Amount should be a decimal number") from None
        if not value.is_finite() or value <= 0:
            raise _invalid("amount", "Amount should be greater than 0")
        checkout = body.get("checkout") or {}
        metadata = body.get("metadata") or {}
        if not isinstance(checkout, dict) or not isinstance(metadata, dict):
            raise _invalid("checkout", "checkout and metadata must be objects")
        minutes = checkout.get("expirationMinutes") or 15
        if not isinstance(minutes, int | float) or isinstance(minutes, bool) or minutes <= 0:
            raise _invalid("checkout.expirationMinutes", "expirationMinutes must be positive")
        places = EXPONENTS[currency]
        minor = int((value.scaleb(places)).to_integral_value())
        return self._new_invoice(store, minor, currency, metadata, checkout, minutes).data

    def _new_invoice(
        self,
        store: _Store,
        minor: int,
        currency: str,
        metadata: Mapping[str, Any],
        checkout: Mapping[str, Any],
        minutes: float = 15,
        app_id: str | None = None,
    ) -> _Invoice:
        now = self.now()
        invoice_id = objects.btcpay_id()
        data = objects.invoice(
            invoice_id=invoice_id,
            store_id=store.id,
            amount=_decimal(minor, currency),
            currency=currency,
            metadata=metadata,
            checkout=checkout,
            checkout_link=f"{self.url}/i/{invoice_id}",
            created_s=now,
            expiration_s=now + math.ceil(minutes * 60),
            monitoring_s=now + math.ceil(minutes * 60) + MONITORING_S,
        )
        inv = store.invoices[invoice_id] = _Invoice(data, minor, app_id=app_id)
        self._emit(store, "InvoiceCreated", inv)
        return inv

    async def _pos(self, app_id: str, view_type: str | None = None) -> Any:
        """A Point of Sale app's public form post (btcpayserver@03345c28
        BTCPayServer/Plugins/PointOfSale/Controllers/UIPointOfSaleController.cs:186-441): no
        authentication, CORS open to all; ``orderId`` is taken from the caller as it is
        (``OrderId = orderId ?? AppService.GetRandomOrderId()``, :406). The amount is the item
        chosen (``choiceKey``, never below its price), else the keypad's ``amount``, plus a
        ``customAmount`` where the app shows one; negative inputs count as 0. The answer is a
        redirect to the invoice's checkout, or ``{"invoiceId"}`` to a caller that accepts
        JSON."""
        app = next((s.apps[app_id] for s in self._stores.values() if app_id in s.apps), None)
        wants_json = request.headers.get("Accept", "").startswith("application/json")
        if app is None:
            if wants_json:
                return {"error": "App not found"}
            return Response("App not found", status=404)
        form = await request.form
        if view_type is not None and view_type not in POS_VIEWS:
            return Response("Not found", status=404)
        view = view_type or app.default_view
        places = EXPONENTS[app.currency]

        def money(name: str) -> int:
            try:
                value = Decimal(str(form.get(name) or "0"))
            except InvalidOperation:
                return 0
            if not value.is_finite():
                return 0
            return max(int(value.scaleb(places).to_integral_value()), 0)

        choice = form.get("choiceKey") or ""
        show_custom = app.show_custom_amount
        if not choice and not show_custom and view not in ("Cart", "Light"):
            return _redirect(f"/apps/{app.id}/pos")  # nothing to sell without an item
        lines: list[int] = []
        metadata: dict[str, Any] = {}
        cart: list[dict[str, Any]] = []
        if choice:
            if choice not in app.items:
                return Response("Not found", status=404)
            title, price = app.items[choice]
            paid = max(money("amount"), price)
            lines.append(paid)
            cart.append({"id": choice, "price": _number(paid, places), "count": 1})
            metadata.update(itemCode=choice, itemDesc=title)
        elif form.get("amount"):
            lines.append(money("amount"))
        if show_custom and form.get("customAmount"):
            lines.append(money("customAmount"))
        total = sum(lines)
        if total <= 0:
            message = "Zero amount invoices are disabled"  # DisableZeroAmountInvoice
            return {"error": message} if wants_json else _redirect(f"/apps/{app.id}/pos")
        email = form.get("email")
        metadata = {
            **metadata,
            **({"buyerEmail": email} if email else {}),
            "orderId": form.get("orderId") or objects.btcpay_id(22),
            "orderUrl": f"{self.url}/apps/{app.id}/pos",
            "posData": {"cart": cart, "total": _number(total, places)},
        }
        redirect = form.get("redirectUrl") or f"{self.url}/apps/{app.id}/pos"
        inv = self._new_invoice(
            self._stores[app.store_id],
            total,
            app.currency,
            metadata,
            {"redirectURL": redirect},
            app_id=app.id,
        )
        if wants_json:
            return {"invoiceId": inv.data["id"]}
        return _redirect(f"/i/{inv.data['id']}")

    async def _get_invoice(self, store_id: str, invoice_id: str) -> Any:
        store = self._store(store_id)
        if invoice_id not in store.invoices:
            raise GreenfieldError(404, "invoice-not-found", "The invoice was not found")
        return store.invoices[invoice_id].data

    async def _mark_api(self, store_id: str, invoice_id: str) -> Any:
        store = self._store(store_id)
        if invoice_id not in store.invoices:
            raise GreenfieldError(404, "invoice-not-found", "The invoice was not found")
        status = (await self._json()).get("status")
        inv = store.invoices[invoice_id]
        self._mark(store, inv, str(status))  # any other status is refused the same way
        return inv.data

    async def _refund_api(self, invoice_id: str) -> Any:
        """``POST /api/v1/invoices/{invoiceId}/refund`` (the store found from the invoice): a pull
        payment the buyer claims (``PullPaymentData`` with its ``viewLink``), and
        ``InvoiceRefund``. Only a settled invoice is refunded (Greenfield answers 422 else)."""
        try:
            owner, inv = self._find(invoice_id)
        except KeyError:
            raise GreenfieldError(404, "invoice-not-found", "The invoice was not found") from None
        self._store(owner.id)  # the store's own key, as Greenfield checks
        body = await self._json()
        variant = body.get("refundVariant")
        if variant not in ("RateThen", "CurrentRate", "OverpaidAmount", "Fiat", "Custom"):
            raise GreenfieldError(422, "", "refundVariant is required", "refundVariant")
        if inv.data["status"] != "Settled":
            raise GreenfieldError(
                422, "", "Cannot refund an invoice that is not settled", "invoiceId"
            )
        currency = str(inv.data["currency"])
        amount = str(inv.data["amount"])
        if variant == "Custom":
            custom = _minor(body.get("customAmount"), currency)
            if custom is None or body.get("customCurrency") != currency:
                raise GreenfieldError(
                    422, "", "customAmount or customCurrency is invalid", "customAmount"
                )
            if not 0 < custom <= inv.amount_minor:
                raise GreenfieldError(
                    422, "", "customAmount is more than the invoice's amount", "customAmount"
                )
            amount = str(body["customAmount"])
        pull = {
            "id": secrets.token_hex(10),
            "name": body.get("name") or f"Refund {invoice_id}",
            "description": body.get("description") or "",
            "currency": currency,
            "amount": amount,
            "archived": False,
            "autoApproveClaims": False,
        }
        pull["viewLink"] = f"{self.url}/pull-payments/{pull['id']}"
        self._emit(owner, "InvoiceRefund", inv, pullPaymentId=pull["id"])
        return pull

    async def _deliveries(self, store_id: str, webhook_id: str) -> Any:
        store = self._store(store_id)
        if webhook_id not in store.webhooks:
            raise GreenfieldError(404, "webhook-not-found", "The webhook was not found")
        return [
            {k: v for k, v in record.items() if k not in ("webhookId", "event")}
            for record in reversed(store.deliveries.values())
            if record["webhookId"] == webhook_id
        ]

    async def _redeliver_api(self, store_id: str, webhook_id: str, delivery_id: str) -> Any:
        store = self._store(store_id)
        record = store.deliveries.get(delivery_id)
        if record is None or record["webhookId"] != webhook_id:
            raise GreenfieldError(404, "webhookdelivery-not-found", "Webhook delivery not found")
        return Response(
            json.dumps(self._redeliver(store, delivery_id)), content_type="application/json"
        )

    async def _page(self, invoice_id: str) -> Any:
        try:
            _, inv = self._find(invoice_id)
        except KeyError:
            return Response("Invoice not found", status=404)
        return Response(pages.invoice_page(inv.data), content_type="text/html; charset=utf-8")

    async def _page_act(self, invoice_id: str) -> Any:
        try:
            _, inv = self._find(invoice_id)
        except KeyError:
            return Response("Invoice not found", status=404)
        action = (await request.form).get("action")
        acts = {
            "pay": lambda: self.pay(invoice_id),
            "pay-part": lambda: self.pay(invoice_id, part=True),
            "expire": lambda: self.expire(invoice_id),
            "confirm": lambda: self.confirm(invoice_id),
            "invalidate": lambda: self.invalidate(invoice_id),
        }
        act = acts.get(str(action))
        if act is not None:
            await act()
        checkout = inv.data.get("checkout") or {}
        settled = inv.data["status"] == "Settled"
        if settled and checkout.get("redirectURL") and checkout.get("redirectAutomatically"):
            return _see_other(_placeholders(str(checkout["redirectURL"]), inv.data))
        return _see_other(f"/i/{invoice_id}")


def _decimal(minor: int, currency: str) -> str:
    places = EXPONENTS[currency]
    return f"{Decimal(minor).scaleb(-places):.{places}f}"


def _btc(minor: int, data: Mapping[str, Any]) -> str:
    """A made-up BTC value for a fiat amount (one unit of the currency = 1,000 sats)."""
    sats = minor * 1000 // 10 ** EXPONENTS[str(data["currency"])]
    return f"{Decimal(max(sats, 1)).scaleb(-8):.8f}"


def _placeholders(url: str, data: Mapping[str, Any]) -> str:
    """``{InvoiceId}`` and ``{OrderId}`` in a redirect address, as BTCPay fills them."""
    order_id = str((data.get("metadata") or {}).get("orderId") or "")
    return url.replace("{InvoiceId}", str(data["id"])).replace("{OrderId}", order_id)


def _number(minor: int, places: int) -> float | int:
    """A JSON number, as Newtonsoft writes a decimal of ``posData``."""
    return float(Decimal(minor).scaleb(-places)) if places else minor


def _see_other(location: str) -> Response:
    return Response(b"", status=303, headers={"Location": location})


def _redirect(location: str) -> Response:
    """ASP.NET's ``RedirectToAction``: 302 Found."""
    return Response(b"", status=302, headers={"Location": location})


async def _render_error(error: GreenfieldError) -> tuple[Any, int]:
    # async: Quart runs a plain function in an asyncio executor, which trio does not have
    return error.response()


def _minor(value: Any, currency: str) -> int | None:
    """Minor units of a Greenfield decimal string; None when it is not one, or has more
    decimals than the currency."""
    try:
        minor = Decimal(str(value)).scaleb(EXPONENTS[currency])
    except (InvalidOperation, KeyError):
        return None
    return int(minor) if minor == minor.to_integral_value() and isinstance(value, str) else None
