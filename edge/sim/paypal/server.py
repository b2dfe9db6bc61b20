"""A loopback PayPal: the API subset the node calls, the buyer's approval pages, and webhooks
signed with a certificate the simulator makes and serves.

State is in memory, per app: an app is a client id, made on its first token call (a client id
seen again with another secret is refused, as PayPal refuses it). Every ``/v1`` and ``/v2`` call
needs a bearer token of the app; objects of another app are not found.

API (JSON in and out, PayPal's error shape): ``POST /v1/oauth2/token``;
``POST /v2/checkout/orders``, ``GET /v2/checkout/orders/{id}``,
``POST /v2/checkout/orders/{id}/capture``; ``GET /v2/payments/captures/{id}``,
``POST /v2/payments/captures/{id}/refund``; ``POST /v1/catalogs/products``,
``POST|GET /v1/billing/plans[/{id}]``, ``POST /v1/billing/subscriptions``,
``GET /v1/billing/subscriptions/{id}``, ``POST .../{id}/cancel|suspend|activate``;
``POST|GET /v1/notifications/webhooks``, ``GET /v1/notifications/certs/{id}`` (no token, as at
PayPal). Pages: ``/checkoutnow?token=`` (Approve, Decline, Cancel) and
``/webapps/billing/subscriptions?ba_token=`` (Approve, Cancel). ``POST /sim/sign`` signs a
body for ``edge trigger``.

``PayPal-Request-Id``: a create or capture with an id the app used before answers what the first
one answered, without doing anything again (PayPal keeps them 6 hours; here for ever).

Deliveries: each event of an action goes to every webhook of the app that takes its type, in
order, each awaited (with a few quick retries that resend the same transmission, as PayPal's
retries do) before the action answers; outcomes are appended to ``delivered``. With
``deliveries_paused`` the events wait in ``held`` until ``release_held()``.
"""

from __future__ import annotations

import base64
import copy
import datetime as dt
import json
import logging
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

import httpx
import trio
from quart import Response, request
from quart_trio import QuartTrio

from edge.providers.paypal.money import CURRENCIES, from_paypal, to_paypal
from edge.providers.paypal.signature import sign
from edge.sim.loopback import LoopbackServer
from edge.sim.paypal import objects, pages
from edge.sim.paypal.certificate import signing_certificate

DELIVERY_RETRIES = 3
TOKEN_TTL_S = 32400
log = logging.getLogger(__name__)


class PayPalError(Exception):
    """An API answer in PayPal's error shape."""

    def __init__(self, status: int, name: str, message: str, issue: str | None = None) -> None:
        super().__init__(message)
        self.status, self.name, self.message, self.issue = status, name, message, issue

    def response(self) -> tuple[dict[str, Any], int]:
        body: dict[str, Any] = {
            "name": self.name,
            "message": self.message,
            "debug_id": secrets.token_hex(7),
            "links": [],
        }
        if self.issue:
            body["details"] = [{"issue": self.issue, "description": self.message}]
        return body, self.status


class OAuthError(PayPalError):
    """A refusal of ``/v1/oauth2/token`` or of a token, in OAuth's shape (not PayPal's)."""

    def response(self) -> tuple[dict[str, Any], int]:
        return {"error": self.name, "error_description": self.message}, self.status


def _unprocessable(issue: str, message: str) -> PayPalError:
    return PayPalError(422, "UNPROCESSABLE_ENTITY", message, issue)


def _not_found(what: str) -> PayPalError:
    return PayPalError(
        404,
        "RESOURCE_NOT_FOUND",
        f"The specified resource does not exist: {what}.",
        "INVALID_RESOURCE_ID",
    )


@dataclass
class _Order:
    order: dict[str, Any]
    return_url: str
    cancel_url: str
    decline: bool = False  # approved with a funding source that capture will refuse
    outcome: str = "COMPLETED"  # the capture's status when it is made
    capture_answer: dict[str, Any] | None = None  # the first capture's answer
    capture_request: str | None = None  # its PayPal-Request-Id


@dataclass
class _Subscription:
    subscription: dict[str, Any]
    plan: dict[str, Any]
    token: str
    return_url: str
    cancel_url: str


@dataclass
class _App:
    client_id: str
    secret: str
    orders: dict[str, _Order] = field(default_factory=dict)
    captures: dict[str, dict[str, Any]] = field(default_factory=dict)
    refunded: dict[str, int] = field(default_factory=dict)  # capture id -> minor units
    products: dict[str, dict[str, Any]] = field(default_factory=dict)
    plans: dict[str, dict[str, Any]] = field(default_factory=dict)
    subscriptions: dict[str, _Subscription] = field(default_factory=dict)
    disputes: dict[str, dict[str, Any]] = field(default_factory=dict)
    webhooks: list[dict[str, Any]] = field(default_factory=list)
    requests: dict[str, tuple[int, dict[str, Any]]] = field(default_factory=dict)
    invoices: set[str] = field(default_factory=set)


class PayPalSimulator(LoopbackServer):
    """Run it in a nursery: ``url = await nursery.start(sim.run)``; ``stop()`` ends it. Tests may
    set ``fail_next_requests`` (the next N API calls answer 503), ``hold_captures`` (captures
    answer 503 while it is set), ``token_ttl_s`` and ``deliveries_paused``."""

    def __init__(self) -> None:
        self.fail_next_requests = 0
        self.hold_captures = False
        self.token_ttl_s = TOKEN_TTL_S
        self.token_calls = 0
        self.deliveries_paused = False
        self.held: list[tuple[_App, dict[str, Any]]] = []
        self.delivered: list[tuple[dict[str, Any], str, int]] = []
        self._apps: dict[str, _App] = {}
        self._tokens: dict[str, str] = {}  # access token -> client id
        self._key, self._pem = signing_certificate("messageverificationcerts.sandbox.paypal.com")
        self._cert_id = "CERT-sim-" + secrets.token_hex(8)
        super().__init__(self._build_app())

    @property
    def cert_url(self) -> str:
        return f"{self.url}/v1/notifications/certs/{self._cert_id}"

    # --- Python API for tests and the demo ----------------------------------------------

    def register_webhook(
        self, client_id: str, client_secret: str, url: str, event_types: list[str] | None = None
    ) -> str:
        """A webhook of the app ``client_id`` (made if new) to ``url``; returns its id."""
        app = self._app_for(client_id, client_secret)
        return self._add_webhook(app, url, event_types or ["*"])["id"]

    def expire_tokens(self) -> None:
        """Every token issued so far stops working (PayPal answers 401 invalid_token)."""
        self._tokens.clear()

    def capture_count(self, order_id: str) -> int:
        """How many captures were made for the order: 0 or 1, however often it was asked."""
        _, order = self._find_order(order_id)
        return 0 if order.capture_answer is None else 1

    def order_of(self, tx_id: str) -> str:
        """The order whose ``custom_id`` is ``tx_id``."""
        for app in self._apps.values():
            for order_id, order in app.orders.items():
                if order.order["purchase_units"][0].get("custom_id") == tx_id:
                    return order_id
        raise KeyError(tx_id)

    def subscription_of(self, tx_id: str) -> str:
        """The subscription whose ``custom_id`` is ``tx_id``."""
        for app in self._apps.values():
            for subscription_id, sub in app.subscriptions.items():
                if sub.subscription.get("custom_id") == tx_id:
                    return subscription_id
        raise KeyError(tx_id)

    def set_capture_outcome(self, order_id: str, status: str) -> None:
        """The capture of this order comes out ``PENDING`` or ``DECLINED``."""
        self._find_order(order_id)[1].outcome = status

    async def renew(self, subscription_id: str) -> None:
        """A billing cycle is paid: ``PAYMENT.SALE.COMPLETED``."""
        app, sub = self._find_subscription(subscription_id)
        obj = sub.subscription
        info = obj.setdefault("billing_info", {})
        info["failed_payments_count"] = 0
        info["last_payment"] = {"amount": _price(sub.plan), "time": objects.now_iso()}
        info["next_billing_time"] = _later(info.get("next_billing_time"), sub.plan)
        await self._emit(
            app, ("PAYMENT.SALE.COMPLETED", objects.sale(self.url, obj, _price(sub.plan)))
        )

    async def fail_payment(self, subscription_id: str) -> None:
        """A billing cycle's payment fails: ``BILLING.SUBSCRIPTION.PAYMENT.FAILED``."""
        app, sub = self._find_subscription(subscription_id)
        info = sub.subscription.setdefault("billing_info", {})
        info["failed_payments_count"] = int(info.get("failed_payments_count") or 0) + 1
        info["last_failed_payment"] = {"amount": _price(sub.plan), "time": objects.now_iso()}
        await self._emit(app, ("BILLING.SUBSCRIPTION.PAYMENT.FAILED", sub.subscription))

    async def dispute(self, capture_id: str) -> str:
        """The buyer opens a dispute: ``CUSTOMER.DISPUTE.CREATED``; its id."""
        app, capture = self._find_capture(capture_id)
        dispute = objects.dispute(self.url, capture)
        app.disputes[dispute["dispute_id"]] = dispute
        await self._emit(app, ("CUSTOMER.DISPUTE.CREATED", dispute))
        return str(dispute["dispute_id"])

    async def resolve_dispute(self, dispute_id: str, outcome_code: str) -> None:
        """``CUSTOMER.DISPUTE.RESOLVED`` with ``dispute_outcome.outcome_code``."""
        for app in self._apps.values():
            dispute = app.disputes.get(dispute_id)
            if dispute is not None:
                dispute.update(
                    status="RESOLVED",
                    update_time=objects.now_iso(),
                    dispute_outcome={"outcome_code": outcome_code},
                )
                await self._emit(app, ("CUSTOMER.DISPUTE.RESOLVED", dispute))
                return
        raise KeyError(dispute_id)

    async def reverse(self, capture_id: str) -> None:
        """The payment is taken back (a chargeback): ``PAYMENT.CAPTURE.REVERSED``."""
        app, capture = self._find_capture(capture_id)
        capture["status"] = "REFUNDED"
        reversal = objects.refund(self.url, capture, capture["amount"], capture["amount"])
        await self._emit(app, ("PAYMENT.CAPTURE.REVERSED", reversal))

    async def reverse_approval(self, order_id: str) -> None:
        """``CHECKOUT.PAYMENT-APPROVAL.REVERSED``: the approval fell through before capture."""
        app, order = self._find_order(order_id)
        order.order["status"] = "VOIDED"
        await self._emit(app, ("CHECKOUT.PAYMENT-APPROVAL.REVERSED", order.order))

    def sign_headers(self, webhook_id: str, body: bytes) -> dict[str, str]:
        """The headers PayPal sends with ``body`` to the webhook ``webhook_id``."""
        transmission_id, at = objects.transmission()
        return {
            "Content-Type": "application/json",
            "PAYPAL-TRANSMISSION-ID": transmission_id,
            "PAYPAL-TRANSMISSION-TIME": at,
            "PAYPAL-TRANSMISSION-SIG": sign(self._key, transmission_id, at, webhook_id, body),
            "PAYPAL-CERT-URL": self.cert_url,
            "PAYPAL-AUTH-ALGO": "SHA256withRSA",
        }

    async def release_held(self) -> None:
        """Deliver what waited while ``deliveries_paused`` was set, in order."""
        held, self.held = self.held, []
        for app, event in held:
            await self._deliver(app, event)

    # --- state ------------------------------------------------------------------------

    def _app_for(self, client_id: str, secret: str) -> _App:
        app = self._apps.get(client_id)
        if app is None:
            app = self._apps[client_id] = _App(client_id, secret)
        elif not secrets.compare_digest(app.secret, secret):
            raise OAuthError(401, "invalid_client", "Client Authentication failed")
        return app

    def _add_webhook(self, app: _App, url: str, event_types: list[str]) -> dict[str, Any]:
        webhook_id = objects.paypal_id(17)
        webhook = {
            "id": webhook_id,
            "url": url,
            "event_types": [{"name": name} for name in event_types],
            "links": [objects.link(f"{self.url}/v1/notifications/webhooks/{webhook_id}", "self")],
        }
        app.webhooks.append(webhook)
        return webhook

    def _find_order(self, order_id: str) -> tuple[_App, _Order]:
        for app in self._apps.values():
            if order_id in app.orders:
                return app, app.orders[order_id]
        raise KeyError(order_id)

    def _find_capture(self, capture_id: str) -> tuple[_App, dict[str, Any]]:
        for app in self._apps.values():
            if capture_id in app.captures:
                return app, app.captures[capture_id]
        raise KeyError(capture_id)

    def _find_subscription(self, subscription_id: str) -> tuple[_App, _Subscription]:
        for app in self._apps.values():
            if subscription_id in app.subscriptions:
                return app, app.subscriptions[subscription_id]
        raise KeyError(subscription_id)

    # --- deliveries -------------------------------------------------------------------

    async def _emit(self, app: _App, *events: tuple[str, Mapping[str, Any]]) -> None:
        for event_type, resource in events:
            event = objects.envelope(self.url, event_type, copy.deepcopy(dict(resource)))
            if self.deliveries_paused:
                self.held.append((app, event))
            else:
                await self._deliver(app, event)

    async def _deliver(self, app: _App, event: dict[str, Any]) -> None:
        body = json.dumps(event).encode()
        async with httpx.AsyncClient(timeout=10.0) as client:
            for webhook in app.webhooks:
                names = {t["name"] for t in webhook["event_types"]}
                if "*" not in names and event["event_type"] not in names:
                    continue
                headers = self.sign_headers(webhook["id"], body)  # one transmission, retried
                status = 0
                for _ in range(DELIVERY_RETRIES + 1):
                    try:
                        status = (
                            await client.post(webhook["url"], content=body, headers=headers)
                        ).status_code
                    except httpx.HTTPError:
                        status = 0
                    if 200 <= status < 300:
                        break
                    await trio.sleep(0.05)
                self.delivered.append((event, webhook["url"], status))

    # --- HTTP -------------------------------------------------------------------------

    def _build_app(self) -> QuartTrio:
        app = QuartTrio(__name__)
        app.register_error_handler(PayPalError, _render_error)
        app.register_error_handler(OAuthError, _render_error)
        app.before_request(self._gate)
        route = app.add_url_rule
        route("/v1/oauth2/token", view_func=self._token, methods=["POST"])
        route("/v2/checkout/orders", view_func=self._create_order, methods=["POST"])
        route("/v2/checkout/orders/<order_id>", view_func=self._get_order)
        route("/v2/checkout/orders/<order_id>/capture", view_func=self._capture, methods=["POST"])
        route("/v2/payments/captures/<capture_id>", view_func=self._get_capture)
        route("/v2/payments/captures/<capture_id>/refund", view_func=self._refund, methods=["POST"])
        route("/v1/catalogs/products", view_func=self._create_product, methods=["POST"])
        route("/v1/billing/plans", view_func=self._create_plan, methods=["POST"])
        route("/v1/billing/plans/<plan_id>", view_func=self._get_plan)
        route("/v1/billing/subscriptions", view_func=self._create_subscription, methods=["POST"])
        route("/v1/billing/subscriptions/<sub_id>", view_func=self._get_subscription)
        route(
            "/v1/billing/subscriptions/<sub_id>/<action>",
            view_func=self._subscription_action,
            methods=["POST"],
        )
        route("/v1/notifications/webhooks", view_func=self._webhooks, methods=["GET", "POST"])
        route("/v1/notifications/certs/<cert_id>", view_func=self._cert)
        route("/sim/sign", view_func=self._sign, methods=["POST"])
        route("/checkoutnow", view_func=self._approval_page)
        route("/checkoutnow", view_func=self._approval_act, methods=["POST"])
        route("/webapps/billing/subscriptions", view_func=self._subscription_page)
        route("/webapps/billing/subscriptions", view_func=self._subscription_act, methods=["POST"])
        return app

    async def _gate(self) -> None:
        # read every body before answering: one left unread on a kept-alive connection has
        # been seen to leave the client's next request there without an answer
        await request.get_data()
        if request.path.startswith(("/v1/", "/v2/")) and self.fail_next_requests > 0:
            self.fail_next_requests -= 1
            raise PayPalError(503, "SERVICE_UNAVAILABLE", "Simulated failure (fail_next_requests).")

    def _caller(self) -> _App:
        scheme, _, token = request.headers.get("Authorization", "").partition(" ")
        client_id = self._tokens.get(token.strip()) if scheme.lower() == "bearer" else None
        if client_id is None:
            raise OAuthError(401, "invalid_token", "Token signature verification failed")
        return self._apps[client_id]

    async def _json(self) -> dict[str, Any]:
        raw = await request.get_data()
        if not raw.strip():
            return {}
        try:
            body = json.loads(raw)
        except ValueError:
            raise PayPalError(
                400, "INVALID_REQUEST", "Request is not well-formed.", "MALFORMED_REQUEST_JSON"
            ) from None
        if not isinstance(body, dict):
            raise PayPalError(
                400, "INVALID_REQUEST", "Request is not well-formed.", "MALFORMED_REQUEST_JSON"
            )
        return body

    def _replayed(
        self, app: _App, scope: str
    ) -> tuple[str | None, tuple[int, dict[str, Any]] | None]:
        request_id = request.headers.get("PayPal-Request-Id")
        if not request_id:
            return None, None
        key = f"{scope}|{request_id}"
        return key, app.requests.get(key)

    async def _token(self) -> Any:
        self.token_calls += 1
        scheme, _, encoded = request.headers.get("Authorization", "").partition(" ")
        try:
            client_id, _, secret = base64.b64decode(encoded).decode().partition(":")
        except ValueError:
            client_id = secret = ""
        form = await request.form
        if scheme.lower() != "basic" or not client_id or not secret:
            raise OAuthError(401, "invalid_client", "Client Authentication failed")
        if form.get("grant_type") != "client_credentials":
            raise OAuthError(400, "unsupported_grant_type", "Grant Type is NULL")
        app = self._app_for(client_id, secret)
        token = "A21AA" + secrets.token_urlsafe(48)
        self._tokens[token] = app.client_id
        return {
            "scope": "https://uri.paypal.com/services/payments/payment",
            "access_token": token,
            "token_type": "Bearer",
            "app_id": "APP-80W284485P519543T",
            "expires_in": self.token_ttl_s,
            "nonce": objects.now_iso() + secrets.token_hex(8),
        }

    async def _create_order(self) -> Any:
        app = self._caller()
        key, saved = self._replayed(app, "order")
        if saved is not None:
            return saved[1], 200
        body = await self._json()
        units = body.get("purchase_units")
        if (
            body.get("intent") not in ("CAPTURE", "AUTHORIZE")
            or not isinstance(units, list)
            or len(units) != 1
        ):
            raise _unprocessable(
                "INVALID_PARAMETER_VALUE", "intent and one purchase unit are required."
            )
        unit: dict[str, Any] = units[0] if isinstance(units[0], dict) else {}
        amount: dict[str, Any] = unit["amount"] if isinstance(unit.get("amount"), dict) else {}
        currency, value = amount.get("currency_code"), amount.get("value")
        if currency not in CURRENCIES:
            raise _unprocessable("CURRENCY_NOT_SUPPORTED", "Currency code is not supported.")
        minor = from_paypal(value, currency)
        if minor is None or to_paypal(minor, str(currency)) != value:
            raise _unprocessable(
                "DECIMAL_PRECISION",
                "The value of the field should not be more than two decimal places"
                " (none for JPY, HUF, TWD).",
            )
        invoice = unit.get("invoice_id")
        if invoice and invoice in app.invoices:
            raise _unprocessable("DUPLICATE_INVOICE_ID", "Duplicate Invoice ID detected.")
        source: dict[str, Any] = (
            body["payment_source"] if isinstance(body.get("payment_source"), dict) else {}
        )
        context = (
            (source.get("paypal") or {}).get("experience_context")
            or body.get("application_context")
            or {}
        )
        order = objects.order(self.url, body, with_payment_source="paypal" in source)
        app.orders[order["id"]] = _Order(
            order, str(context.get("return_url") or ""), str(context.get("cancel_url") or "")
        )
        if invoice:
            app.invoices.add(invoice)
        if key:
            app.requests[key] = (201, copy.deepcopy(order))
        return order, 201

    def _order(self, app: _App, order_id: str) -> _Order:
        order = app.orders.get(order_id)
        if order is None:
            raise _not_found(order_id)
        return order

    async def _get_order(self, order_id: str) -> Any:
        return self._order(self._caller(), order_id).order

    async def _capture(self, order_id: str) -> Any:
        app = self._caller()
        order = self._order(app, order_id)
        if self.hold_captures:
            raise PayPalError(503, "SERVICE_UNAVAILABLE", "Simulated outage (hold_captures).")
        request_id = request.headers.get("PayPal-Request-Id")
        if order.capture_answer is not None:
            if request_id and request_id == order.capture_request:
                return order.capture_answer, 200
            raise _unprocessable(
                "ORDER_ALREADY_CAPTURED",
                "Order already captured.If 'intent=CAPTURE' only one capture per order is allowed.",
            )
        if order.order["status"] != "APPROVED":
            raise _unprocessable(
                "ORDER_NOT_APPROVED", "Payer has not yet approved the Order for payment."
            )
        if order.decline:
            error = _unprocessable(
                "INSTRUMENT_DECLINED",
                "The instrument presented was either declined by the processor or bank, or it"
                " can't be used for this payment.",
            )
            body, status = error.response()
            body["links"] = [objects.link(f"{self.url}/checkoutnow?token={order_id}", "redirect")]
            return body, status
        capture = objects.capture(self.url, order.order, order.outcome)
        app.captures[capture["id"]] = capture
        unit = order.order["purchase_units"][0]
        unit["payments"] = {"captures": [capture]}
        order.order["status"] = "COMPLETED"
        order.order["update_time"] = objects.now_iso()
        order.capture_answer = copy.deepcopy(order.order)
        order.capture_request = request_id
        await self._emit(app, (f"PAYMENT.CAPTURE.{order.outcome}", capture))
        return order.capture_answer, 201

    async def _get_capture(self, capture_id: str) -> Any:
        app = self._caller()
        capture = app.captures.get(capture_id)
        if capture is None:
            raise _not_found(capture_id)
        return capture

    async def _refund(self, capture_id: str) -> Any:
        app = self._caller()
        capture = app.captures.get(capture_id)
        if capture is None:
            raise _not_found(capture_id)
        if capture["status"] not in ("COMPLETED", "PARTIALLY_REFUNDED"):
            raise _unprocessable(
                "CAPTURE_FULLY_REFUNDED", "The capture has already been fully refunded."
            )
        body = await self._json()
        currency = capture["amount"]["currency_code"]
        paid = from_paypal(capture["amount"]["value"], currency) or 0
        left = paid - app.refunded.get(capture_id, 0)
        asked = body.get("amount") if isinstance(body.get("amount"), dict) else None
        minor = from_paypal(asked.get("value"), asked.get("currency_code")) if asked else left
        if minor is None or not 0 < minor <= left:
            raise _unprocessable(
                "REFUND_AMOUNT_EXCEEDED",
                "The refund amount must be less than or equal to the capture amount that has"
                " not yet been refunded.",
            )
        app.refunded[capture_id] = app.refunded.get(capture_id, 0) + minor
        capture["status"] = "REFUNDED" if app.refunded[capture_id] >= paid else "PARTIALLY_REFUNDED"
        total = objects.money(currency, str(to_paypal(app.refunded[capture_id], currency)))
        refund = objects.refund(
            self.url, capture, objects.money(currency, str(to_paypal(minor, currency))), total
        )
        await self._emit(app, ("PAYMENT.CAPTURE.REFUNDED", refund))
        return refund, 201

    async def _create_product(self) -> Any:
        app = self._caller()
        key, saved = self._replayed(app, "product")
        if saved is not None:
            return saved[1], 200
        body = await self._json()
        if not isinstance(body.get("name"), str) or not body["name"]:
            raise PayPalError(
                400, "INVALID_REQUEST", "name is required.", "MISSING_REQUIRED_PARAMETER"
            )
        product = objects.product(self.url, body)
        app.products[product["id"]] = product
        if key:
            app.requests[key] = (201, copy.deepcopy(product))
        return product, 201

    async def _create_plan(self) -> Any:
        app = self._caller()
        key, saved = self._replayed(app, "plan")
        if saved is not None:
            return saved[1], 200
        body = await self._json()
        if body.get("product_id") not in app.products:
            raise _unprocessable(
                "INVALID_PARAMETER_VALUE", "product_id is not a product of this account."
            )
        cycles = body.get("billing_cycles")
        if not isinstance(cycles, list) or not cycles:
            raise PayPalError(
                400, "INVALID_REQUEST", "billing_cycles is required.", "MISSING_REQUIRED_PARAMETER"
            )
        plan = objects.plan(self.url, body)
        app.plans[plan["id"]] = plan
        if key:
            app.requests[key] = (201, copy.deepcopy(plan))
        return plan, 201

    async def _get_plan(self, plan_id: str) -> Any:
        plan = self._caller().plans.get(plan_id)
        if plan is None:
            raise _not_found(plan_id)
        return plan

    async def _create_subscription(self) -> Any:
        app = self._caller()
        key, saved = self._replayed(app, "subscription")
        if saved is not None:
            return saved[1], 200
        body = await self._json()
        plan = app.plans.get(str(body.get("plan_id")))
        if plan is None:
            raise _unprocessable("INVALID_PARAMETER_VALUE", "The specified plan does not exist.")
        context = body.get("application_context") or {}
        subscription, token = objects.subscription(self.url, plan, body)
        app.subscriptions[subscription["id"]] = _Subscription(
            subscription,
            plan,
            token,
            str(context.get("return_url") or ""),
            str(context.get("cancel_url") or ""),
        )
        if key:
            app.requests[key] = (201, copy.deepcopy(subscription))
        await self._emit(app, ("BILLING.SUBSCRIPTION.CREATED", subscription))
        return subscription, 201

    async def _get_subscription(self, sub_id: str) -> Any:
        sub = self._caller().subscriptions.get(sub_id)
        if sub is None:
            raise _not_found(sub_id)
        return sub.subscription

    async def _subscription_action(self, sub_id: str, action: str) -> Any:
        app = self._caller()
        sub = app.subscriptions.get(sub_id)
        moves = {
            "cancel": ("CANCELLED", "BILLING.SUBSCRIPTION.CANCELLED"),
            "suspend": ("SUSPENDED", "BILLING.SUBSCRIPTION.SUSPENDED"),
            "activate": ("ACTIVE", "BILLING.SUBSCRIPTION.ACTIVATED"),
        }
        if sub is None or action not in moves:
            raise _not_found(sub_id)
        status, event_type = moves[action]
        if sub.subscription["status"] in ("CANCELLED", "EXPIRED"):
            raise _unprocessable(
                "SUBSCRIPTION_STATUS_INVALID", "Invalid subscription status for this action."
            )
        sub.subscription.update(status=status, status_update_time=objects.now_iso())
        await self._emit(app, (event_type, sub.subscription))
        return Response(b"", status=204)

    async def _webhooks(self) -> Any:
        app = self._caller()
        if request.method == "GET":
            return {"webhooks": app.webhooks}
        body = await self._json()
        url, types = body.get("url"), body.get("event_types")
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise PayPalError(
                400, "INVALID_REQUEST", "url is not valid.", "INVALID_PARAMETER_SYNTAX"
            )
        names = [t.get("name") for t in types] if isinstance(types, list) else []
        if not names or not all(isinstance(n, str) for n in names):
            raise PayPalError(
                400, "INVALID_REQUEST", "event_types are required.", "MISSING_REQUIRED_PARAMETER"
            )
        return self._add_webhook(app, url, names), 201

    async def _cert(self, cert_id: str) -> Any:
        if cert_id != self._cert_id:
            raise _not_found(cert_id)
        return Response(self._pem, content_type="application/x-pem-file")

    async def _sign(self) -> Any:
        webhook_id = request.args.get("webhook_id", "")
        if not webhook_id:
            raise PayPalError(400, "INVALID_REQUEST", "webhook_id is required.")
        body: bytes = await request.get_data(as_text=False)  # type: ignore[assignment]
        return self.sign_headers(webhook_id, body)

    # --- the buyer's pages --------------------------------------------------------------

    def _order_for_page(self, token: str) -> tuple[_App, _Order]:
        try:
            return self._find_order(token)
        except KeyError:
            raise _not_found(token) from None

    async def _approval_page(self) -> Any:
        _, order = self._order_for_page(request.args.get("token", ""))
        return Response(pages.approval_page(order.order), content_type="text/html; charset=utf-8")

    async def _approval_act(self) -> Any:
        form = await request.form
        app, order = self._order_for_page(request.args.get("token", "") or form.get("token", ""))
        action = form.get("action")
        order_id = order.order["id"]
        if action == "cancel":
            return _see_other(_with_query(order.cancel_url, token=order_id))
        if order.order["status"] not in ("CREATED", "PAYER_ACTION_REQUIRED", "APPROVED"):
            return Response(
                pages.approval_page(order.order), content_type="text/html; charset=utf-8"
            )
        payer = objects.payer()
        order.order.update(status="APPROVED", payer=payer, update_time=objects.now_iso())
        order.decline = action == "decline"
        await self._emit(app, ("CHECKOUT.ORDER.APPROVED", order.order))
        return _see_other(_with_query(order.return_url, token=order_id, PayerID=payer["payer_id"]))

    def _subscription_for_page(self, token: str) -> tuple[_App, _Subscription]:
        for app in self._apps.values():
            for sub in app.subscriptions.values():
                if sub.token == token:
                    return app, sub
        raise _not_found(token)

    async def _subscription_page(self) -> Any:
        _, sub = self._subscription_for_page(request.args.get("ba_token", ""))
        html = pages.subscription_page(sub.subscription, sub.plan, sub.token)
        return Response(html, content_type="text/html; charset=utf-8")

    async def _subscription_act(self) -> Any:
        form = await request.form
        token = request.args.get("ba_token", "") or form.get("ba_token", "")
        app, sub = self._subscription_for_page(token)
        obj = sub.subscription
        if form.get("action") == "cancel":
            return _see_other(_with_query(sub.cancel_url, ba_token=token))
        if obj["status"] == "APPROVAL_PENDING":
            now = objects.now_iso()
            price = _price(sub.plan)
            obj.update(
                status="ACTIVE",
                status_update_time=now,
                start_time=now,
                subscriber={
                    "payer_id": objects.payer()["payer_id"],
                    "email_address": "buyer@example.com",
                },
                billing_info={
                    "outstanding_balance": objects.zero(price["currency_code"]),
                    "cycle_executions": [
                        {
                            "tenure_type": "REGULAR",
                            "sequence": 1,
                            "cycles_completed": 1,
                            "cycles_remaining": 0,
                            "total_cycles": 0,
                        }
                    ],
                    "last_payment": {"amount": price, "time": now},
                    "next_billing_time": _later(now, sub.plan),
                    "failed_payments_count": 0,
                },
            )
            await self._emit(
                app,
                ("BILLING.SUBSCRIPTION.ACTIVATED", obj),
                ("PAYMENT.SALE.COMPLETED", objects.sale(self.url, obj, price)),
            )
        return _see_other(
            _with_query(sub.return_url, subscription_id=obj["id"], ba_token=token, token=token)
        )


async def _render_error(error: PayPalError) -> tuple[dict[str, Any], int]:
    # async: Quart runs a plain function in an asyncio executor, which trio does not have
    return error.response()


def _price(plan: Mapping[str, Any]) -> dict[str, str]:
    return dict(plan["billing_cycles"][0]["pricing_scheme"]["fixed_price"])


_UNITS = {"DAY": 1, "WEEK": 7, "MONTH": 30, "YEAR": 365}


def _later(when: Any, plan: Mapping[str, Any]) -> str:
    """The next billing time: one of the plan's intervals after ``when`` (a month is 30 days
    here; PayPal counts calendar months)."""
    try:
        start = dt.datetime.fromisoformat(str(when).replace("Z", "+00:00"))
    except ValueError:
        start = dt.datetime.now(dt.UTC)
    frequency = plan["billing_cycles"][0]["frequency"]
    days = _UNITS.get(frequency["interval_unit"], 30) * int(frequency.get("interval_count") or 1)
    return objects.now_iso((start + dt.timedelta(days=days)).timestamp())


def _with_query(url: str, **params: str) -> str:
    return url + ("&" if "?" in url else "?") + urlencode(params)


def _see_other(url: str) -> Response:
    return Response(b"", status=303, headers={"Location": url})
