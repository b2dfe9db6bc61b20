"""A loopback BTCPay Server: the Greenfield invoice API the node calls, the buyer's invoice page,
refunds as pull payments the buyer claims, and webhooks delivered as BTCPay delivers them.

State is in memory, per store: a store has one API key (``Authorization: token <key>``), its
invoices, its pull payments and their payouts, its webhooks and their deliveries.

API (Greenfield's JSON and error shapes), under ``/api/v1/stores/{storeId}``: ``POST
/invoices``, ``GET /invoices`` (by creation date, newest first, ``skip``/``take``), ``GET
/invoices/{invoiceId}``, ``GET /invoices/{invoiceId}/payment-methods``, ``POST
/invoices/{invoiceId}/status`` (mark Settled or Invalid by hand, in the states BTCPay allows),
``POST /invoices/{invoiceId}/refund`` (a pull payment the buyer claims, and ``InvoiceRefund``),
``GET /pull-payments`` (``includeArchived``), ``DELETE /pull-payments/{pullPaymentId}``
(archive), ``GET /webhooks/{webhookId}/deliveries``, ``POST
/webhooks/{webhookId}/deliveries/{deliveryId}/redeliver``; public: ``GET
/api/v1/pull-payments/{pullPaymentId}`` and its ``/payouts`` (``includeCancelled``); store-less
(from v2.4.0, ``version``): ``POST /api/v1/invoices/{invoiceId}/refund``. Pages:
``/i/{invoiceId}``, and a store's Point of Sale apps, ``POST /apps/{appId}/pos``: anyone may
create an invoice there, with an ``orderId`` of their choosing
(``UIPointOfSaleController.ViewPointOfSale``), which the store's webhooks then report like any
other invoice.

Not simulated: rate limits. BTCPay limits logins, registrations and public invoice forms
(``ZoneLimits``: ``RateLimitsFilter`` on UI routes, ``Throttle`` in Basic authentication and the
Point of Sale), never a Greenfield call made with an API key, so the node meets no 429 from the
routes above.

Deliveries (``WebhookSender.cs``): bodies are indented JSON signed ``BTCPay-Sig:
sha256=<hmac>``; each webhook sends in order, a failing delivery holding back the next; a
delivery answered 5xx, 408, 429 or not at all is retried after ``retry_delays_s`` (10 s, 1 min,
then 6 x 10 min), each retry a new delivery (new ``deliveryId``, the first one's
``originalDeliveryId``, ``isRedelivery: true``, the first one's ``timestamp``); any other 4xx is
final. A manual redelivery is a new delivery too, signed with the webhook's current secret.
Before each delivery (a first one or a manual redelivery) the sender asks ``webhook_faults``:
dropped, it is never sent; held, it waits for ``release``; mis-signed, it and its retries are
signed with ``WRONG_SECRET`` (a 401 then ends it, as BTCPay ends any 4xx).
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
from edge.sim.btcpay import deliveries, objects, pages, pulls
from edge.sim.btcpay.errors import GreenfieldError
from edge.sim.btcpay.errors import invalid as _invalid
from edge.sim.btcpay.pulls import PullPayment
from edge.sim.faults import DROP, HOLD, MISSIGN, WRONG_SECRET, WebhookFaults
from edge.sim.loopback import LoopbackServer

RETRY_DELAYS_S = (10.0, 60.0, *([600.0] * 6))
MONITORING_S = 86400
MARK_REFUSED = "Status can only be marked to invalid or settled within certain conditions."
POS_VIEWS = ("Static", "Cart", "Light", "Print")
# The Greenfield version simulated: v2.4.1 is the oracle commit's (btcpayserver@03345c28).
# Store-less routes (``/api/v1/invoices/{invoiceId}/...``) came with v2.4.0 (btcpayserver#7313,
# ad6fa344c); ``InvoiceRefund`` and the refund's ``payoutMethods`` array with v2.4.1
# (btcpayserver#7374, 96cea5cac; #7413, d4da8916a).
VERSION = (2, 4, 1)
STORELESS_SINCE = (2, 4, 0)
INVOICE_REFUND_SINCE = (2, 4, 1)
# One unit of any currency is 1,000 sats (``_btc``): the invoices' rate, per BTC, never moves.
RATE = Decimal(100000)
log = logging.getLogger(__name__)


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
    address: str = field(default_factory=objects.address)  # where the buyer pays


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
    # what the key may do, as BTCPay lists it (``GET /api/v1/api-keys/current``); a key made
    # for this store with every store permission unless a test narrows it
    permissions: list[str] = field(default_factory=list)
    invoices: dict[str, _Invoice] = field(default_factory=dict)
    webhooks: dict[str, _Webhook] = field(default_factory=dict)
    deliveries: dict[str, dict[str, Any]] = field(default_factory=dict)  # id -> record
    apps: dict[str, _PosApp] = field(default_factory=dict)
    pull_payments: dict[str, PullPayment] = field(default_factory=dict)


MODIFY_STORE = "btcpay.store.canmodifystoresettings"
CREATE_INVOICE = "btcpay.store.cancreateinvoice"
# the policies that include creating an invoice (BTCPayServerServices' policy definitions)
_CREATES_INVOICES = (
    "unrestricted",
    MODIFY_STORE,
    "btcpay.store.canmodifyinvoices",
    CREATE_INVOICE,
)


def _creates_invoices(permissions: list[str], store_id: str) -> bool:
    """Does one of ``permissions`` include creating invoices on ``store_id``? (The one
    permission this simulator refuses by.)"""
    for permission in permissions:
        name, _, scope = permission.partition(":")
        if name in _CREATES_INVOICES and scope in ("", store_id):
            return True
    return False


class BTCPaySimulator(LoopbackServer):
    """Run it in a nursery: ``url = await nursery.start(sim.run)``; ``stop()`` ends it. Tests may
    set ``retry_delays_s`` (shorter waits), ``clock_offset_s`` (a later "now" for the next
    events), ``fail_next_requests`` (the next N API calls answer 503), ``version`` (the
    Greenfield version simulated, ``VERSION``; an older one answers 404 on the store-less routes
    and sends no ``InvoiceRefund``), ``faults`` (answers lost after acting) and
    ``webhook_faults`` (deliveries dropped, held until ``release``, or mis-signed)."""

    def __init__(
        self,
        retry_delays_s: tuple[float, ...] = RETRY_DELAYS_S,
        version: tuple[int, int, int] = VERSION,
    ) -> None:
        self.retry_delays_s = retry_delays_s
        self.version = version
        self.webhook_faults = WebhookFaults()
        self._held: list[tuple[_Webhook, dict[str, Any]]] = []
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

    def register_store(
        self, api_key: str, store_id: str | None = None, permissions: list[str] | None = None
    ) -> str:
        """A store reached with ``api_key``; returns its id. ``permissions`` narrows what the
        key may do (BTCPay's policy names, ``name:storeId`` for one store); by default it may
        modify the store's settings, which includes everything the node does."""
        store_id = store_id or objects.btcpay_id(44)
        granted = [f"{MODIFY_STORE}:{store_id}"] if permissions is None else list(permissions)
        store = _Store(store_id, api_key, granted)
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
        payment = objects.payment(_btc(sent, data), now, destination=inv.address)
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
        """The invoice's time runs out unpaid (or part paid): New -> Expired. Its
        ``expirationTime`` is now, if it was later (BTCPay expires an invoice once
        ``ExpirationTime <= UtcNow``, InvoiceWatcher.cs:80): what is paid from now on is late."""
        store, inv = self._find(invoice_id)
        if inv.data["status"] != "New":
            return
        inv.data["expirationTime"] = min(inv.data["expirationTime"], self.now())
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

    async def refund(
        self,
        invoice_id: str,
        variant: str = "Fiat",
        amount: str | None = None,
        currency: str | None = None,
    ) -> str:
        """The merchant refunds in BTCPay's own screens (``UIInvoiceController.Refund``,
        UIInvoiceController.UI.cs:331-540): a pull payment named ``Refund {invoiceId}`` of the
        ``variant`` chosen (``Custom``: ``amount`` of ``currency``, the invoice's by default),
        and ``InvoiceRefund``; its id. ``GreenfieldError`` where BTCPay refuses."""
        store, inv = self._find(invoice_id)
        body: dict[str, Any] = {"refundVariant": variant}
        if variant == "Custom":
            body.update(customAmount=amount, customCurrency=currency or inv.data["currency"])
        return str(self._refund(store, inv, body)["id"])

    def pull_payment(self, pull_payment_id: str) -> dict[str, Any]:
        """A pull payment's ``PullPaymentData``."""
        return self._pull(pull_payment_id).data

    def pull_payments_of(self, invoice_id: str) -> list[str]:
        """The ids of the pull payments refunding ``invoice_id`` (BTCPay's ``RefundData``)."""
        return [
            pp.id
            for store in self._stores.values()
            for pp in store.pull_payments.values()
            if pp.invoice_id == invoice_id
        ]

    def payouts_of(self, pull_payment_id: str) -> list[dict[str, Any]]:
        """A pull payment's payouts (``PayoutData``), cancelled ones included."""
        return list(self._pull(pull_payment_id).payouts.values())

    async def claim(self, pull_payment_id: str, amount: str | None = None) -> str:
        """The buyer claims ``amount`` (a decimal string in the pull payment's currency; what is
        left when None): a payout, ``PayoutCreated`` (and ``PayoutApproved`` where the pull
        payment approves its claims); its id."""
        pp = self._pull(pull_payment_id)
        claimed = Decimal(amount) if amount is not None else None
        payout_id, published = pp.claim(claimed, self.now(), RATE)
        self._publish(pp, published)
        return payout_id

    async def approve_payout(self, payout_id: str) -> None:
        """The store approves a claim: ``PayoutApproved``."""
        pp = self._pull_of(payout_id)
        self._publish(pp, pp.approve(payout_id, RATE))

    async def complete_payout(self, payout_id: str) -> None:
        """The store pays a payout out (approving it first if it waits): ``PayoutUpdated``,
        Completed: the refund's money has moved."""
        pp = self._pull_of(payout_id)
        self._publish(pp, pp.complete(payout_id, RATE))

    async def cancel_payout(self, payout_id: str) -> None:
        """The store cancels a payout not paid yet: ``PayoutUpdated``, Cancelled (the pull
        payment may be claimed again)."""
        pp = self._pull_of(payout_id)
        self._publish(pp, pp.cancel(payout_id))

    async def archive_pull_payment(self, pull_payment_id: str) -> None:
        """The store withdraws a pull payment: archived, its payouts not paid cancelled."""
        pp = self._pull(pull_payment_id)
        self._publish(pp, pp.archive())

    async def pay_refund(self, pull_payment_id: str) -> str:
        """The buyer claims what is left of a refund and the store pays it out: the refund is
        complete. The payout's id."""
        payout_id = await self.claim(pull_payment_id)
        await self.complete_payout(payout_id)
        return payout_id

    def release(self) -> int:
        """Send the deliveries ``webhook_faults`` held, in the order they were held; how many."""
        held, self._held = self._held, []
        for webhook, event in held:
            self._queue(webhook, event)
        return len(held)

    def redeliver(self, delivery_id: str) -> str:
        """A manual redelivery of ``delivery_id``; the new delivery's id."""
        for store in self._stores.values():
            if delivery_id in store.deliveries:
                return self._redeliver(store, delivery_id)
        raise KeyError(delivery_id)

    # --- state --------------------------------------------------------------------------

    def _pull(self, pull_payment_id: str) -> PullPayment:
        for store in self._stores.values():
            if pull_payment_id in store.pull_payments:
                return store.pull_payments[pull_payment_id]
        raise KeyError(pull_payment_id)

    def _pull_of(self, payout_id: str) -> PullPayment:
        for store in self._stores.values():
            for pp in store.pull_payments.values():
                if payout_id in pp.payouts:
                    return pp
        raise KeyError(payout_id)

    def _refund(self, store: _Store, inv: _Invoice, body: dict[str, Any]) -> dict[str, Any]:
        """``RefundInvoice`` (GreenfieldInvoiceController.cs:321-511, ``pulls.refund_terms``) and
        ``CreateRefundPullPayment`` (PullPaymentHostedService.cs:106-120): a pull payment linked
        to the invoice, named ``Refund {invoiceId}`` unless named, and ``InvoiceRefund`` with
        its id (from v2.4.1). A refund of nothing paid fails in ``CreatePullPaymentCore``
        ("Amount out of bound", an exception), which Greenfield answers 500."""
        data = inv.data
        if not pulls.can_refund(data["status"], data["additionalStatus"]):
            raise GreenfieldError(400, "non-refundable", "Cannot refund this invoice")
        currency = str(data["currency"])
        crypto_paid = sum((Decimal(p["value"]) for p in inv.payments), Decimal(0))
        marked_settled = (data["status"], data["additionalStatus"]) == ("Settled", "Marked")
        if crypto_paid == 0 and marked_settled:
            # "If no payment, but settled and marked, assume it has been fully paid"
            crypto_paid = Decimal(_btc(inv.amount_minor, data))
        terms = pulls.refund_terms(
            body,
            currency=currency,
            places=EXPONENTS[currency],
            crypto_paid=crypto_paid,
            rate=RATE,
            payout_methods_array=self.version >= INVOICE_REFUND_SINCE,
        )
        if Decimal(terms.amount) <= 0:
            raise GreenfieldError(500, "", "Amount out of bound (Parameter 'create')")
        pull_payment_id = objects.btcpay_id(28)  # Base58 of 20 random bytes
        name = body.get("name")
        pp = PullPayment(
            objects.pull_payment(
                pull_payment_id=pull_payment_id,
                name=name if isinstance(name, str) else f"Refund {data['id']}",
                description=str(body.get("description") or ""),
                currency=terms.currency,
                amount=terms.amount,
                auto_approve=terms.auto_approve,
                view_link=f"{self.url}/pull-payments/{pull_payment_id}",
                starts_s=self.now() - 1,  # "DateTimeOffset.UtcNow - TimeSpan.FromSeconds(1.0)"
            ),
            store.id,
            str(data["id"]),
            terms.payout_methods,
        )
        store.pull_payments[pull_payment_id] = pp
        if self.version >= INVOICE_REFUND_SINCE:
            self._emit(store, "InvoiceRefund", inv, pullPaymentId=pull_payment_id)
        return pp.data

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

    def _publish(self, pp: PullPayment, published: pulls.Published) -> None:
        """Queue each payout event for every webhook of the pull payment's store
        (``PayoutTriggerProvider.GetWebhookEvent``: ``payoutId``, ``pullPaymentId``,
        ``payoutState`` as the payout is when the event is sent)."""
        store, timestamp = self._stores[pp.store_id], self.now()
        for event_type, payout in published:
            for webhook in store.webhooks.values():
                event = objects.payout_delivery(
                    event_type,
                    webhook_id=webhook.id,
                    delivery_id=objects.btcpay_id(),
                    timestamp=timestamp,
                    store_id=store.id,
                    payout_id=payout["id"],
                    pull_payment_id=pp.id,
                    payout_state=payout["state"],
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
                verdict = self.webhook_faults.verdict(str(event.get("type")))
                try:
                    if verdict == HOLD:
                        self._held.append((webhook, event))
                    elif verdict != DROP:
                        await self._deliver(client, store, webhook, event, verdict == MISSIGN)
                finally:
                    self._pending -= 1
                    if self._pending == 0:
                        self._idle.set()

    async def _deliver(
        self,
        client: httpx.AsyncClient,
        store: _Store,
        webhook: _Webhook,
        event: dict[str, Any],
        missigned: bool = False,
    ) -> None:
        """One delivery and its automatic retries; ``missigned``: each signed with a secret the
        receiver does not know (``WebhookFaults``), so a 401 ends it as BTCPay ends any 4xx."""
        delays = list(self.retry_delays_s)
        while True:
            status = await self._send(client, store, webhook, event, missigned)
            retryable = status == 0 or status >= 500 or status in (408, 429)
            if 200 <= status < 300 or not retryable or not webhook.automatic_redelivery:
                return
            if not delays:
                return
            await trio.sleep(delays.pop(0))
            event = {**event, "deliveryId": objects.btcpay_id(), "isRedelivery": True}

    async def _send(
        self,
        client: httpx.AsyncClient,
        store: _Store,
        webhook: _Webhook,
        event: dict[str, Any],
        missigned: bool = False,
    ) -> int:
        body = objects.body(event)
        # the secret as it is now: a redelivery after a rotation is signed with the new one
        secret = WRONG_SECRET if missigned else webhook.secret
        headers = deliveries.signed(body, secret)
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
        route("/api/v1/api-keys/current", view_func=self._current_key)
        route(f"{stores}/invoices", view_func=self._create_invoice, methods=["POST"])
        route(f"{stores}/invoices", view_func=self._list_invoices)
        route(f"{stores}/invoices/<invoice_id>", view_func=self._get_invoice)
        route(f"{stores}/invoices/<invoice_id>/status", view_func=self._mark_api, methods=["POST"])
        route(f"{stores}/invoices/<invoice_id>/payment-methods", view_func=self._payment_methods)
        route(
            f"{stores}/invoices/<invoice_id>/refund", view_func=self._refund_api, methods=["POST"]
        )
        route(
            "/api/v1/invoices/<invoice_id>/refund",
            view_func=self._storeless_refund_api,
            methods=["POST"],
        )
        route(f"{stores}/pull-payments", view_func=self._pull_payments_api)
        route(
            f"{stores}/pull-payments/<pull_payment_id>",
            view_func=self._archive_api,
            methods=["DELETE"],
        )
        route("/api/v1/pull-payments/<pull_payment_id>", view_func=self._pull_payment_api)
        route("/api/v1/pull-payments/<pull_payment_id>/payouts", view_func=self._payouts_api)
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

    async def _current_key(self) -> Any:
        """``GET /api/v1/api-keys/current``: the key the request carries and its permissions."""
        scheme, _, key = request.headers.get("Authorization", "").partition(" ")
        # one user's key may reach several stores: its permissions are theirs together
        stores = [
            s for s in self._stores.values() if secrets.compare_digest(s.api_key, key.strip())
        ]
        if scheme.lower() != "token" or not stores:
            raise GreenfieldError(
                401, "unauthenticated", "Authentication is required for accessing this endpoint"
            )
        granted = list(dict.fromkeys(p for s in stores for p in s.permissions))
        return {"apiKey": stores[0].api_key, "label": "edge", "permissions": granted}

    async def _create_invoice(self, store_id: str) -> Any:
        store = self._store(store_id)
        if not _creates_invoices(store.permissions, store.id):
            raise GreenfieldError(
                403,
                "missing-permission",
                "Insufficient API Permissions. Please use an API key"
                f" with permission: {CREATE_INVOICE}",
            )
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

    async def _list_invoices(self, store_id: str) -> Any:
        """``GET .../invoices`` (``GreenfieldInvoiceController.GetInvoices``, :85-125; its query,
        ``InvoiceRepository.GetInvoiceQuery``, InvoiceRepository.cs:718-862): ``orderId`` and
        ``status`` (repeated), ``startDate``/``endDate`` unix seconds on the creation time (both
        ends included; a value that is not one is a 422 ``Invalid unix timestamp``; start above
        end a 422), newest first, then ``skip`` and ``take``; ``includePaymentMethods`` adds
        each one's."""
        store = self._store(store_id)
        args = request.args
        start, end = (
            _unix(args.get("startDate"), "startDate"),
            _unix(args.get("endDate"), "endDate"),
        )
        if start is not None and end is not None and start > end:
            raise _invalid("startDate", "startDate should not be above endDate")
        order_ids, statuses = args.getlist("orderId"), args.getlist("status")
        newest_first = sorted(
            enumerate(store.invoices.values()),
            key=lambda seq_inv: (seq_inv[1].data["createdTime"], seq_inv[0]),
            reverse=True,
        )
        found = [
            inv
            for _, inv in newest_first
            if (start is None or start <= inv.data["createdTime"])
            and (end is None or inv.data["createdTime"] <= end)
            and (not order_ids or inv.data["metadata"].get("orderId") in order_ids)
            and (not statuses or inv.data["status"] in statuses)
        ]
        skip, take = _count(args.get("skip")), _count(args.get("take"))
        found = found[skip or 0 :]
        found = found[:take] if take is not None else found
        with_methods = args.get("includePaymentMethods", "").lower() == "true"
        return [
            {**inv.data, "paymentMethods": _payment_methods(inv)} if with_methods else inv.data
            for inv in found
        ]

    async def _payment_methods(self, store_id: str, invoice_id: str) -> Any:
        """``GET .../invoices/{invoiceId}/payment-methods`` (``GetInvoicePaymentMethods``,
        GreenfieldInvoiceController.cs:290-302, ``ToPaymentMethodModels``): the on-chain
        method, its rate and what was paid to it."""
        store = self._store(store_id)
        if invoice_id not in store.invoices:
            raise GreenfieldError(404, "invoice-not-found", "The invoice was not found")
        return _payment_methods(store.invoices[invoice_id])

    async def _refund_api(self, store_id: str, invoice_id: str) -> Any:
        """``POST /api/v1/stores/{storeId}/invoices/{invoiceId}/refund``: a pull payment the
        buyer claims (``_refund``)."""
        store = self._store(store_id)
        if invoice_id not in store.invoices:
            raise GreenfieldError(404, "invoice-not-found", "The invoice was not found")
        return self._refund(store, store.invoices[invoice_id], await self._json())

    async def _storeless_refund_api(self, invoice_id: str) -> Any:
        """``POST /api/v1/invoices/{invoiceId}/refund``, the store found from the invoice: only
        from v2.4.0 (``STORELESS_SINCE``). An older server has no such route: ASP.NET's 404,
        re-executed by ``UIErrorController`` (v2.3.0 Controllers/UIErrorController.cs), which
        answers an API caller (no ``text/html`` in ``Accept``) a bare 404."""
        if self.version < STORELESS_SINCE:
            return Response(b"", status=404)
        try:
            owner, inv = self._find(invoice_id)
        except KeyError:
            raise GreenfieldError(404, "invoice-not-found", "The invoice was not found") from None
        self._store(owner.id)  # the store's own key, as Greenfield checks
        return self._refund(owner, inv, await self._json())

    async def _pull_payments_api(self, store_id: str) -> Any:
        """``GET .../pull-payments`` (``GetPullPayments``, GreenfieldPullPaymentController.cs:
        68-78): the store's pull payments, newest first, archived ones only with
        ``includeArchived=true``."""
        store = self._store(store_id)
        archived = request.args.get("includeArchived", "").lower() == "true"
        newest_first = sorted(
            enumerate(store.pull_payments.values()),
            key=lambda seq_pp: (seq_pp[1].data["startsAt"], seq_pp[0]),
            reverse=True,
        )
        return [pp.data for _, pp in newest_first if archived or not pp.data["archived"]]

    async def _pull_payment_api(self, pull_payment_id: str) -> Any:
        """``GET /api/v1/pull-payments/{pullPaymentId}`` (public, ``GetPullPayment``, :314-324),
        archived or not."""
        return self._public_pull(pull_payment_id).data

    async def _payouts_api(self, pull_payment_id: str) -> Any:
        """``GET /api/v1/pull-payments/{pullPaymentId}/payouts`` (public, ``GetPayouts``,
        :335-352): its payouts, cancelled ones only with ``includeCancelled=true``."""
        pp = self._public_pull(pull_payment_id)
        cancelled = request.args.get("includeCancelled", "").lower() == "true"
        return [p for p in pp.payouts.values() if cancelled or p["state"] != "Cancelled"]

    async def _archive_api(self, store_id: str, pull_payment_id: str) -> Any:
        """``DELETE .../pull-payments/{pullPaymentId}`` (``ArchivePullPayment``, :584-594):
        archived, its payouts not paid cancelled; 200 with no body."""
        store = self._store(store_id)
        pp = store.pull_payments.get(pull_payment_id)
        if pp is None:
            raise GreenfieldError(404, "pullpayment-not-found", "The pull payment was not found")
        self._publish(pp, pp.archive())
        return Response(b"", status=200)

    def _public_pull(self, pull_payment_id: str) -> PullPayment:
        try:
            return self._pull(pull_payment_id)
        except KeyError:
            raise GreenfieldError(
                404, "pullpayment-not-found", "The pull payment was not found"
            ) from None

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


def _payment_methods(inv: _Invoice) -> list[dict[str, Any]]:
    """The invoice's one payment method, on chain, as ``ToPaymentMethodModels`` writes it: the
    invoice's amount in BTC at ``RATE``, what was paid to it, what is due (negative if
    overpaid), each payment."""
    data = inv.data
    amount = Decimal(_btc(inv.amount_minor, data))
    paid = sum((Decimal(p["value"]) for p in inv.payments), Decimal(0))
    return [
        objects.payment_method(
            destination=inv.address,
            rate=str(RATE),
            amount=f"{amount:.8f}",
            paid=f"{paid:.8f}",
            due=f"{amount - paid:.8f}",
            payments=list(inv.payments),
        )
    ]


def _unix(value: str | None, name: str) -> int | None:
    """A query's unix timestamp (``DateTimeOffsetModelBinder``: ``long.Parse``); a 422 on
    ``name`` when it is not one."""
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:
        raise _invalid(name, "Invalid unix timestamp") from None


def _count(value: str | None) -> int | None:
    """``skip``/``take``: an ``int?`` ASP.NET leaves null when it cannot bind it."""
    try:
        return max(int(value), 0) if value is not None else None
    except ValueError:
        return None
