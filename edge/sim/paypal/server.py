"""A loopback PayPal: the API subset the node calls, the buyer's approval pages, and webhooks
signed with a certificate the simulator makes and serves.

State is in memory, per app: an app is a client id, made on its first token call (a client id
seen again with another secret is refused, as PayPal refuses it). Every ``/v1`` and ``/v2`` call
needs a bearer token of the app; objects of another app are not found.

API (JSON in and out, PayPal's error shape): ``POST /v1/oauth2/token``;
``POST /v2/checkout/orders``, ``GET /v2/checkout/orders/{id}`` (with the refunds of its
capture), ``POST /v2/checkout/orders/{id}/capture``; ``GET /v2/payments/captures/{id}``,
``POST /v2/payments/captures/{id}/refund``, ``GET /v2/payments/refunds/{id}``;
``POST /v1/catalogs/products``, ``POST|GET /v1/billing/plans[/{id}]``,
``POST /v1/billing/subscriptions``, ``GET /v1/billing/subscriptions/{id}[/transactions]``,
``POST .../{id}/cancel|suspend|activate``; ``GET /v1/customer/disputes[/{id}]``;
``POST|GET /v1/notifications/webhooks``, ``GET /v1/notifications/webhooks-events``,
``GET /v1/notifications/certs/{id}`` (no token, as at PayPal). Each route's docstring cites
what it follows. Pages: ``/checkoutnow?token=`` (Approve, Decline, Cancel) and
``/webapps/billing/subscriptions?ba_token=`` (Approve, Cancel). ``POST /sim/sign`` signs a
body for ``edge trigger``.

``PayPal-Request-Id``, as PayPal documents it: "when you include a previously specified
PayPal-Request-Id header in a request, PayPal returns the latest status of the previous request
that used that same header" (https://developer.paypal.com/api/rest/reference/idempotency/). The
ids are the app's, across calls: any POST (create order, capture, refund, product, plan,
subscription) with an id a successful earlier POST used answers that request's stored answer
with 200 ("A successful response to an idempotent request", checkout_orders_v2.json), and does
nothing. A capture sent with its order's create id gets the order as created back, and captures
nothing. A refused request stores nothing. PayPal keeps them 6 hours; here for ever. A refund
call with the id of one still in progress (``pause_refunds``) is refused 409 and does nothing:
"When you send two simultaneous API requests with same PayPal-Request-Id header, PayPal
processes the first request and might fail the second request" (the idempotency page above),
with the refund's 409 of payments_payment_v2.json (``error_409`` ``RESOURCE_CONFLICT``, issue
``PREVIOUS_REQUEST_IN_PROGRESS``, "The request failed because a previous call for the given
resource is in progress."); once the first is done, the id answers its refund. Orders v2
documents no 409, so creates and captures have none here.

Orders made in the buyer's browser, as the JS SDK makes them: the page loads the SDK with the
merchant's public client id alone (paypal-js ``clientId``, types/script-options.d.ts:3), gets
the facilitator token the SDK holds (``POST /sdk/token?client-id=``, standing for the SDK's own
calls), and with it ``actions.order.create(options)`` posts the full Orders v2 body, custom_id
and invoice_id included ("Accepts the same options as the request body of the
/v2/checkout/orders api", types/components/buttons.d.ts:18-22), and ``actions.order.capture()``
captures it after the buyer approves (buttons.d.ts:59-66; paypal/paypal-js@f791da2f). The order
is the merchant's: its events go to the merchant's webhooks like any order's. That token may
create, read and capture orders, nothing else (403 NOT_AUTHORIZED).

Money, as Orders v2 refuses it (422): more than two decimals ``DECIMAL_PRECISION`` ("If the
currency supports decimals, only two decimal place precision is supported."); any decimals in
JPY, HUF or TWD ``DECIMALS_NOT_SUPPORTED`` ("This currency does not support decimals. If you
pass a decimal amount, an error occurs.", developer.paypal.com/docs/api/reference/currency-codes/;
the issue named at developer.paypal.com/api/rest/integration/orders-api/troubleshooting);
above 999999999999999.99 ``MAX_VALUE_EXCEEDED``; a value that is not a decimal string (the
``money`` pattern, at most 32 characters) 400 ``INVALID_PARAMETER_SYNTAX``. ``invoice_id`` must
be "unique for each transaction" (DUPLICATE_INVOICE_ID, at create and at capture): an invoice
id that a capture of the app carries already is refused.

Refunds (``set_refund_outcome``, ``settle_refund``) may stay ``PENDING`` and then complete or
fail; disputes go from inquiry to claim to resolution (``dispute``, ``escalate_dispute``,
``resolve_dispute``), with their webhooks; ``rate_limit`` answers 429 ``RATE_LIMIT_REACHED``.

Deliveries: each event of an action goes to every webhook of the app that takes its type, in
order, each awaited (with a few quick retries that resend the same transmission, as PayPal's
retries do) before the action answers; outcomes are appended to ``delivered``. Every event is
kept for the app's events list whatever becomes of its delivery. With ``deliveries_paused``, or
a ``webhook_faults`` HOLD, the events wait in ``held`` until ``release_held()``; a DROP is never
sent; a MISSIGN is signed for another webhook id, so it does not verify.
"""

from __future__ import annotations

import base64
import copy
import datetime as dt
import json
import logging
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any
from urllib.parse import urlencode

import httpx
import trio
from quart import Response, request
from quart_trio import QuartTrio

from edge.sim.faults import DROP, HOLD, MISSIGN, WRONG_SECRET, WebhookFaults
from edge.sim.loopback import LoopbackServer
from edge.sim.paypal import deliveries, objects, pages
from edge.sim.paypal.certificate import signing_certificate

DELIVERY_RETRIES = 3
TOKEN_TTL_S = 32400
_MONEY_VALUE = re.compile(r"(-?[0-9]+)|(-?([0-9]+)?[.][0-9]+)")
MAX_VALUE = Decimal("999999999999999.99")
NOT_AUTHORIZED = "Authorization failed due to insufficient permissions."
# customer_disputes_v1.json dispute_outcome.outcome_code values that give the buyer money back
BUYER_OUTCOMES = frozenset({"RESOLVED_BUYER_FAVOUR", "ACCEPTED", "RESOLVED_WITH_PAYOUT"})
REFUND_STATUSES = ("COMPLETED", "PENDING", "CANCELLED", "FAILED")  # payments refund_status
EVENTS_PAGE = 10  # notifications_webhooks_v1.json page_size default
DISPUTES_PAGE = 10  # customer_disputes_v1.json page_size default (at most 50)
log = logging.getLogger(__name__)


@dataclass
class _RateLimit:
    path: re.Pattern[str]
    times: int
    retry_after_s: int | None


class PayPalError(Exception):
    """An API answer in PayPal's error shape (``error`` and ``error_details`` of the OpenAPI
    documents): ``description`` says the issue, ``message`` the error."""

    def __init__(
        self,
        status: int,
        name: str,
        message: str,
        issue: str | None = None,
        description: str | None = None,
        field: str | None = None,
        value: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status, self.name, self.message, self.issue = status, name, message, issue
        self.description, self.field, self.value = description or message, field, value

    def response(self) -> tuple[dict[str, Any], int]:
        body: dict[str, Any] = {
            "name": self.name,
            "message": self.message,
            "debug_id": secrets.token_hex(7),
            "links": [],
        }
        if self.issue:
            detail: dict[str, Any] = {"issue": self.issue, "description": self.description}
            if self.field:
                detail.update(field=self.field, location="body")
            if self.value is not None:
                detail["value"] = self.value
            body["details"] = [detail]
        return body, self.status


class OAuthError(PayPalError):
    """A refusal of ``/v1/oauth2/token`` or of a token, in OAuth's shape (not PayPal's)."""

    def response(self) -> tuple[dict[str, Any], int]:
        return {"error": self.name, "error_description": self.message}, self.status


class RateLimitReached(PayPalError):
    """429 ``RATE_LIMIT_REACHED``: PayPal's body is its name, message and debug id."""

    def __init__(self, retry_after_s: int | None) -> None:
        super().__init__(
            429, "RATE_LIMIT_REACHED", "Too many requests. Blocked due to rate limiting."
        )
        self.retry_after_s = retry_after_s

    def response(self) -> tuple[dict[str, Any], int]:
        return {
            "name": self.name,
            "message": self.message,
            "debug_id": secrets.token_hex(7),
        }, self.status


UNPROCESSABLE = (
    "The requested action could not be performed, semantically incorrect, or failed business"
    " validation."
)  # error_422.message (checkout_orders_v2.json)


def _unprocessable(
    issue: str, description: str, field: str | None = None, value: str | None = None
) -> PayPalError:
    return PayPalError(422, "UNPROCESSABLE_ENTITY", UNPROCESSABLE, issue, description, field, value)


def _money_refusal(amount: Any, field: str) -> PayPalError | None:
    """Why PayPal refuses ``amount`` (a ``money`` object), if it does: the ``money`` schema
    (``value`` a string of at most 32 characters matching
    ``^((-?[0-9]+)|(-?([0-9]+)?[.][0-9]+))$``, checkout_orders_v2.json components.schemas.money)
    and the issues of the Orders and Payments documents."""
    amount = amount if isinstance(amount, dict) else {}
    currency, value = amount.get("currency_code"), amount.get("value")
    if not isinstance(value, str) or len(value) > 32 or not _MONEY_VALUE.fullmatch(value):
        return PayPalError(
            400,
            "INVALID_REQUEST",
            "Request is not well-formed, syntactically incorrect, or violates schema.",
            "INVALID_PARAMETER_SYNTAX",
            "The value of a field does not conform to the expected format.",
            f"{field}/value",
            str(value),
        )
    if currency not in objects.CURRENCIES:
        return _unprocessable(
            "CURRENCY_NOT_SUPPORTED",
            "Currency code is not supported.",
            f"{field}/currency_code",
            str(currency),
        )
    decimals = len(value.partition(".")[2])
    if "." in value and currency in objects.NO_DECIMALS:
        return _unprocessable(
            "DECIMALS_NOT_SUPPORTED",
            "Currency does not support decimals. Please refer to"
            " https://developer.paypal.com/docs/api/reference/currency-codes/ for more"
            " information.",
            f"{field}/value",
            value,
        )
    if decimals > 2:
        return _unprocessable(
            "DECIMAL_PRECISION",
            "If the currency supports decimals, only two decimal place precision is supported.",
            f"{field}/value",
            value,
        )
    if Decimal(value) > MAX_VALUE:
        return _unprocessable(
            "MAX_VALUE_EXCEEDED",
            "Should be less than or equal to 999999999999999.99.",
            f"{field}/value",
            value,
        )
    if Decimal(value) <= 0:
        return _unprocessable(
            "CANNOT_BE_ZERO_OR_NEGATIVE",
            "Must be greater than zero. If the currency supports decimals, only two decimal"
            " place precision is supported.",
            f"{field}/value",
            value,
        )
    return None


def _invalid_request(issue: str, description: str, field: str, value: str) -> PayPalError:
    return PayPalError(
        400,
        "INVALID_REQUEST",
        "Request is not well-formed, syntactically incorrect, or violates schema.",
        issue,
        description,
        field,
        value,
    )


def _invalid_parameter(name: str, value: str) -> PayPalError:
    return _invalid_request(
        "INVALID_PARAMETER_VALUE", "The value of a field is invalid.", name, value
    )


# refund_request's text fields (payments_payment_v2.json): name -> (maxLength, what it is)
_REFUND_TEXTS = {"custom_id": 127, "invoice_id": 127, "note_to_payer": 255}
_NOT_ONE_LINE = re.compile(r"[\n\r\x85\u2028\u2029]")  # what "^.*$"'s "." does not match


def _refund_request_refusal(body: Mapping[str, Any]) -> PayPalError | None:
    """Why PayPal refuses a refund request's ``custom_id``, ``invoice_id`` or ``note_to_payer``
    (each ``minLength`` 1, its ``maxLength``, ``pattern`` ``^.*$``): a line break breaks the
    pattern (400 ``INVALID_PARAMETER_SYNTAX``, "The value of the field does not conform to the
    expected format.", developer.paypal.com/api/payments/v2/errors/invalid_parameter_syntax), a
    length out of bounds is ``INVALID_STRING_LENGTH`` ("The value of a field is either too short
    or too long.", .../errors/invalid_string_length); both are captures.refund-400 issues."""
    for name, longest in _REFUND_TEXTS.items():
        value = body.get(name)
        if value is None:
            continue
        text = value if isinstance(value, str) else json.dumps(value)
        if not isinstance(value, str) or _NOT_ONE_LINE.search(value):
            return _invalid_request(
                "INVALID_PARAMETER_SYNTAX",
                "The value of the field does not conform to the expected format.",
                f"/{name}",
                text,
            )
        if not 1 <= len(value) <= longest:
            return _invalid_request(
                "INVALID_STRING_LENGTH",
                "The value of a field is either too short or too long.",
                f"/{name}",
                text,
            )
    return None


def _moment(value: Any) -> dt.datetime | None:
    """A query's RFC 3339 time; None when absent or unreadable."""
    if not isinstance(value, str):
        return None
    try:
        moment = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else None


def _duplicate_invoice(invoice: str) -> PayPalError:
    return _unprocessable(
        "DUPLICATE_INVOICE_ID",
        "Duplicate Invoice ID detected. To avoid a potential duplicate transaction your account"
        " setting requires that Invoice Id be unique for each transaction.",
        "/purchase_units/@reference_id=='default'/invoice_id",
        invoice,
    )


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
    refunded: dict[str, Decimal] = field(default_factory=dict)  # capture id -> amount
    products: dict[str, dict[str, Any]] = field(default_factory=dict)
    plans: dict[str, dict[str, Any]] = field(default_factory=dict)
    subscriptions: dict[str, _Subscription] = field(default_factory=dict)
    disputes: dict[str, dict[str, Any]] = field(default_factory=dict)
    refunds: dict[str, dict[str, Any]] = field(default_factory=dict)  # refund id -> refund
    # capture id -> the status its next refund comes out in (``set_refund_outcome``)
    refund_outcomes: dict[str, str] = field(default_factory=dict)
    # subscription id -> its sales, as its transactions list shows them
    transactions: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)  # what the events list shows
    webhooks: list[dict[str, Any]] = field(default_factory=list)
    # PayPal-Request-Id -> the stored answer of the request that used it, whatever its call
    requests: dict[str, dict[str, Any]] = field(default_factory=dict)
    running: set[str] = field(default_factory=set)  # ids of refund calls still in progress
    invoices: set[str] = field(default_factory=set)  # invoice ids of captures made


class PayPalSimulator(LoopbackServer):
    """Run it in a nursery: ``url = await nursery.start(sim.run)``; ``stop()`` ends it. Tests may
    set ``fail_next_requests`` (the next N API calls answer 503), ``hold_captures`` (captures
    answer 503 while it is set), ``token_ttl_s`` and ``deliveries_paused``; ``rate_limit``
    makes calls answer 429 ``RATE_LIMIT_REACHED``; ``pause_refunds`` keeps refund calls in
    progress; ``faults`` loses answers after acting and ``webhook_faults`` drops, holds or
    mis-signs deliveries (``edge.sim.faults``)."""

    def __init__(self) -> None:
        self.fail_next_requests = 0
        self.hold_captures = False
        self._refunds_paused: trio.Event | None = None  # set by ``resume_refunds``
        self.webhook_faults = WebhookFaults()
        self._rate_limits: list[_RateLimit] = []
        self.token_ttl_s = TOKEN_TTL_S
        self.token_calls = 0
        self.deliveries_paused = False
        self.held: list[tuple[_App, dict[str, Any]]] = []
        self.delivered: list[tuple[dict[str, Any], str, int]] = []
        # every capture request: (order id, PayPal-Request-Id, "merchant" or "browser")
        self.capture_calls: list[tuple[str, str | None, str]] = []
        self._apps: dict[str, _App] = {}
        self._tokens: dict[str, str] = {}  # access token -> client id
        self._browser_tokens: dict[str, str] = {}  # the JS SDK's facilitator token -> client id
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
        self._browser_tokens.clear()

    def order(self, order_id: str) -> dict[str, Any]:
        """The order as it is now (KeyError if unknown)."""
        return self._find_order(order_id)[1].order

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
        await self._emit(app, ("PAYMENT.SALE.COMPLETED", self._sale(app, sub)))

    async def fail_payment(self, subscription_id: str) -> None:
        """A billing cycle's payment fails: ``BILLING.SUBSCRIPTION.PAYMENT.FAILED``."""
        app, sub = self._find_subscription(subscription_id)
        info = sub.subscription.setdefault("billing_info", {})
        info["failed_payments_count"] = int(info.get("failed_payments_count") or 0) + 1
        info["last_failed_payment"] = {"amount": _price(sub.plan), "time": objects.now_iso()}
        await self._emit(app, ("BILLING.SUBSCRIPTION.PAYMENT.FAILED", sub.subscription))

    async def dispute(
        self, capture_id: str, amount: str | None = None, stage: str = "CHARGEBACK"
    ) -> str:
        """The buyer opens a dispute of the capture, for all of it or ``amount`` (a value in
        the capture's currency): ``CUSTOMER.DISPUTE.CREATED``; its id. At ``stage``
        ``CHARGEBACK`` unless told (a claim the merchant must answer, as PayPal opens every
        dispute for a merchant who opted out of inquiries; what this method always made for
        its callers), or ``INQUIRY`` (buyer and merchant talk first; ``escalate_dispute``
        makes it a claim)."""
        app, capture = self._find_capture(capture_id)
        part = objects.money(capture["amount"]["currency_code"], amount) if amount else None
        dispute = objects.dispute(self.url, capture, part, stage)
        app.disputes[dispute["dispute_id"]] = dispute
        await self._emit(app, ("CUSTOMER.DISPUTE.CREATED", dispute))
        return str(dispute["dispute_id"])

    async def escalate_dispute(self, dispute_id: str) -> None:
        """The inquiry becomes a claim PayPal decides (``POST /v1/customer/disputes/{id}/
        escalate``: "the stage in the dispute lifecycle must be INQUIRY"): the stage is
        ``CHARGEBACK`` and PayPal waits for the merchant; ``CUSTOMER.DISPUTE.UPDATED``
        ("A dispute is updated", developer.paypal.com/docs/disputes/webhooks)."""
        app, dispute = self._find_dispute(dispute_id)
        if dispute.get("dispute_life_cycle_stage") != "INQUIRY":
            raise ValueError(f"dispute {dispute_id} is not an inquiry")
        dispute.update(
            dispute_life_cycle_stage="CHARGEBACK",
            status="WAITING_FOR_SELLER_RESPONSE",
            update_time=objects.now_iso(),
        )
        await self._emit(app, ("CUSTOMER.DISPUTE.UPDATED", dispute))

    async def resolve_dispute(
        self, dispute_id: str, outcome_code: str, amount_refunded: str | None = None
    ) -> None:
        """``CUSTOMER.DISPUTE.RESOLVED`` with ``dispute_outcome.outcome_code``; for the buyer
        (``RESOLVED_BUYER_FAVOUR``, ``ACCEPTED``, ``RESOLVED_WITH_PAYOUT``) with
        ``amount_refunded`` ("The amount that either the merchant or PayPal refunds the
        customer"), the disputed amount unless told. An inquiry settled for the buyer is settled
        by a refund PayPal makes ("If the customer accepts the offer, PayPal automatically makes
        a refund", ``make-offer``): that refund of the capture comes first, with its own
        ``PAYMENT.CAPTURE.REFUNDED``. **Not verified**: whether PayPal also sends
        ``PAYMENT.CAPTURE.REVERSED`` when a claim is lost; the simulator does not."""
        app, dispute = self._find_dispute(dispute_id)
        outcome: dict[str, Any] = {"outcome_code": outcome_code}
        if outcome_code in BUYER_OUTCOMES:
            currency = dispute["dispute_amount"]["currency_code"]
            outcome["amount_refunded"] = (
                objects.money(currency, amount_refunded)
                if amount_refunded
                else dict(dispute["dispute_amount"])
            )
            if dispute.get("dispute_life_cycle_stage") == "INQUIRY":
                capture_id = dispute["disputed_transactions"][0]["seller_transaction_id"]
                refund = self._make_refund(
                    app, app.captures[capture_id], Decimal(outcome["amount_refunded"]["value"])
                )
                await self._emit(app, ("PAYMENT.CAPTURE.REFUNDED", refund))
        dispute.update(status="RESOLVED", update_time=objects.now_iso(), dispute_outcome=outcome)
        await self._emit(app, ("CUSTOMER.DISPUTE.RESOLVED", dispute))

    def set_refund_outcome(self, capture_id: str, status: str) -> None:
        """The next refund of this capture comes out ``PENDING`` (an eCheck refund: "The
        reason why the refund has the PENDING or FAILED status": ``ECHECK``), ``FAILED`` or
        ``CANCELLED`` (payments_payment_v2.json ``refund_status``) instead of ``COMPLETED``."""
        if status not in REFUND_STATUSES:
            raise ValueError(f"a refund's status is one of {REFUND_STATUSES}")
        app, _ = self._find_capture(capture_id)
        app.refund_outcomes[capture_id] = status

    async def settle_refund(self, refund_id: str, status: str) -> None:
        """A pending refund ends ``COMPLETED`` (``PAYMENT.CAPTURE.REFUNDED``: "A merchant refunds
        a payment capture"), or ``FAILED`` or ``CANCELLED``, which gives its amount back to the
        capture and sends nothing: PayPal's published webhooks have no event for a refund that
        fails (developer.paypal.com/api/rest/webhooks/event-names/#payments-v2)."""
        app, refund = self._find_refund(refund_id)
        if refund["status"] != "PENDING" or status not in ("COMPLETED", "FAILED", "CANCELLED"):
            raise ValueError(f"refund {refund_id} is {refund['status']}: it cannot become {status}")
        capture = app.captures[_capture_of(refund)]
        refund.update(status=status, update_time=objects.now_iso())
        if status == "COMPLETED":
            refund.pop("status_details", None)
        else:
            self._count_refunded(app, capture, -Decimal(refund["amount"]["value"]))
        self._copy_into_order(app, capture, refund)
        if status == "COMPLETED":
            await self._emit(app, ("PAYMENT.CAPTURE.REFUNDED", refund))

    def refund(self, refund_id: str) -> dict[str, Any]:
        """The refund as it is now (KeyError if unknown)."""
        return self._find_refund(refund_id)[1]

    def refunds_made(self, capture_id: str) -> list[dict[str, Any]]:
        """Every refund made of the capture, in order: one per refund, however often asked."""
        app, _ = self._find_capture(capture_id)
        return [r for r in app.refunds.values() if _capture_of(r) == capture_id]

    def pause_refunds(self) -> None:
        """From now on each refund call, once begun, waits for ``resume_refunds`` with its
        ``PayPal-Request-Id`` in progress (``in_progress``): the time in which another call
        with the id is ``409 PREVIOUS_REQUEST_IN_PROGRESS``, as when the caller gave up on a
        slow answer and retried."""
        if self._refunds_paused is None:
            self._refunds_paused = trio.Event()

    def resume_refunds(self) -> None:
        """Let every paused refund call go on (made or refused as it would have been); later
        ones are not paused."""
        paused, self._refunds_paused = self._refunds_paused, None
        if paused is not None:
            paused.set()

    def stop(self) -> None:
        self.resume_refunds()  # a paused call is shielded from cancellation: it would hold on
        super().stop()

    def in_progress(self, client_id: str) -> frozenset[str]:
        """The app's ``PayPal-Request-Id`` values whose refund call is still in progress."""
        app = self._apps.get(client_id)
        return frozenset(app.running) if app else frozenset()

    def rate_limit(
        self, times: int = 1, path: str = r"/v[12]/", retry_after_s: int | None = None
    ) -> None:
        """The next ``times`` API calls whose path matches ``path`` (from its start) answer 429
        ``RATE_LIMIT_REACHED`` ("Too many requests. Blocked due to rate limiting.",
        developer.paypal.com/api/rest/reference/rate-limiting; the body as PayPal's community
        team quotes it, paypal-community.com "What is the meaning of RATE_LIMIT_REACHED"), with
        ``Retry-After`` when asked: PayPal documents no such header (its guide's example reads
        one "if available")."""
        self._rate_limits.append(_RateLimit(re.compile(path), times, retry_after_s))

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
        return deliveries.signed(body, webhook_id, self._key, self.cert_url)

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

    def _add_webhook(
        self, app: _App, url: str, event_types: list[str], webhook_id: str | None = None
    ) -> dict[str, Any]:
        webhook_id = webhook_id or objects.paypal_id(17)
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

    def _find_dispute(self, dispute_id: str) -> tuple[_App, dict[str, Any]]:
        for app in self._apps.values():
            if dispute_id in app.disputes:
                return app, app.disputes[dispute_id]
        raise KeyError(dispute_id)

    def _find_refund(self, refund_id: str) -> tuple[_App, dict[str, Any]]:
        for app in self._apps.values():
            if refund_id in app.refunds:
                return app, app.refunds[refund_id]
        raise KeyError(refund_id)

    def _sale(self, app: _App, sub: _Subscription) -> dict[str, Any]:
        """A paid billing cycle: the sale its webhook carries, kept as a transaction."""
        sale = objects.sale(self.url, sub.subscription, _price(sub.plan))
        made = objects.subscription_transaction(sale)
        app.transactions.setdefault(sub.subscription["id"], []).append(made)
        return sale

    def _make_refund(
        self,
        app: _App,
        capture: dict[str, Any],
        amount: Decimal,
        custom_id: str | None = None,
        note: str | None = None,
    ) -> dict[str, Any]:
        """A refund of ``amount`` of the capture, in the status ``set_refund_outcome`` asked
        for (``COMPLETED`` unless told): counted against the capture unless it failed at once,
        and shown in the capture's order."""
        currency = capture["amount"]["currency_code"]
        status = app.refund_outcomes.pop(capture["id"], "COMPLETED")
        counted = status in ("COMPLETED", "PENDING")
        refunded = self._count_refunded(app, capture, amount if counted else Decimal(0))
        refund = objects.refund(
            self.url,
            capture,
            objects.money(currency, objects.value_of(amount, currency)),
            objects.money(currency, objects.value_of(refunded, currency)),
            custom_id=custom_id,
            note=note,
            status=status,
        )
        app.refunds[refund["id"]] = refund
        self._copy_into_order(app, capture, refund)
        return refund

    def _count_refunded(self, app: _App, capture: dict[str, Any], amount: Decimal) -> Decimal:
        """Add ``amount`` (taken off when negative) to what the capture has refunded, and set
        its status by it; what it has refunded now."""
        refunded = app.refunded.get(capture["id"], Decimal(0)) + amount
        app.refunded[capture["id"]] = refunded
        paid = Decimal(capture["amount"]["value"])
        capture["status"] = (
            "REFUNDED"
            if refunded >= paid
            else "PARTIALLY_REFUNDED"
            if refunded > 0
            else "COMPLETED"
        )
        return refunded

    def _copy_into_order(self, app: _App, capture: dict[str, Any], refund: dict[str, Any]) -> None:
        """The order's copy of the refund, as ``GET /v2/checkout/orders/{id}`` shows it."""
        order_id = capture["supplementary_data"]["related_ids"]["order_id"]
        order = app.orders.get(order_id)
        if order is None:
            return
        payments = order.order["purchase_units"][0].setdefault("payments", {})
        shown: list[dict[str, Any]] = payments.setdefault("refunds", [])
        copy_ = objects.refund_in_order(refund)
        at = next((n for n, r in enumerate(shown) if r["id"] == refund["id"]), None)
        if at is None:
            shown.append(copy_)
        else:
            shown[at] = copy_

    # --- deliveries -------------------------------------------------------------------

    async def _emit(self, app: _App, *events: tuple[str, Mapping[str, Any]]) -> None:
        """Each event goes to the app's webhooks that take its type, as ``webhook_faults``
        says (sent, dropped, held until ``release_held``, or signed for another webhook id),
        and into the app's list of events (``GET /v1/notifications/webhooks-events``) whatever
        became of its delivery, as PayPal's events list shows undelivered events too."""
        for event_type, resource in events:
            event = objects.envelope(self.url, event_type, copy.deepcopy(dict(resource)))
            if not any(_takes(webhook, event_type) for webhook in app.webhooks):
                continue  # PayPal makes an event notification only for a subscribed webhook
            app.events.append(event)
            verdict = self.webhook_faults.verdict(event_type)
            if verdict == DROP:
                continue
            if self.deliveries_paused or verdict == HOLD:
                self.held.append((app, event))
            else:
                await self._deliver(app, event, missigned=verdict == MISSIGN)

    async def _deliver(self, app: _App, event: dict[str, Any], missigned: bool = False) -> None:
        body = json.dumps(event).encode()
        async with httpx.AsyncClient(timeout=10.0) as client:
            for webhook in app.webhooks:
                if not _takes(webhook, event["event_type"]):
                    continue
                # mis-signed: for a webhook id the receiver does not have, so it cannot verify
                signed_for = WRONG_SECRET if missigned else webhook["id"]
                headers = self.sign_headers(signed_for, body)  # one transmission, retried
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
        route("/sdk/token", view_func=self._browser_token, methods=["POST"])
        route("/v2/checkout/orders", view_func=self._create_order, methods=["POST"])
        route("/v2/checkout/orders/<order_id>", view_func=self._get_order)
        route("/v2/checkout/orders/<order_id>/capture", view_func=self._capture, methods=["POST"])
        route("/v2/payments/captures/<capture_id>", view_func=self._get_capture)
        route("/v2/payments/captures/<capture_id>/refund", view_func=self._refund, methods=["POST"])
        route("/v2/payments/refunds/<refund_id>", view_func=self._get_refund)
        route("/v1/customer/disputes", view_func=self._list_disputes)
        route("/v1/customer/disputes/<dispute_id>", view_func=self._get_dispute)
        route("/v1/notifications/webhooks-events", view_func=self._list_events)
        route("/v1/notifications/webhooks-events/", view_func=self._list_events)
        route("/v1/catalogs/products", view_func=self._create_product, methods=["POST"])
        route("/v1/billing/plans", view_func=self._create_plan, methods=["POST"])
        route("/v1/billing/plans/<plan_id>", view_func=self._get_plan)
        route("/v1/billing/subscriptions", view_func=self._create_subscription, methods=["POST"])
        route("/v1/billing/subscriptions/<sub_id>", view_func=self._get_subscription)
        route("/v1/billing/subscriptions/<sub_id>/transactions", view_func=self._transactions)
        route(
            "/v1/billing/subscriptions/<sub_id>/<action>",
            view_func=self._subscription_action,
            methods=["POST"],
        )
        route("/v1/notifications/webhooks", view_func=self._webhooks, methods=["GET", "POST"])
        route("/v1/notifications/webhooks/<webhook_id>", view_func=self._webhook)
        route("/v1/notifications/certs/<cert_id>", view_func=self._cert)
        route("/sim/sign", view_func=self._sign, methods=["POST"])
        route("/sim/webhooks", view_func=self._sim_webhook, methods=["POST"])
        route("/checkoutnow", view_func=self._approval_page)
        route("/checkoutnow", view_func=self._approval_act, methods=["POST"])
        route("/webapps/billing/subscriptions", view_func=self._subscription_page)
        route("/webapps/billing/subscriptions", view_func=self._subscription_act, methods=["POST"])
        return app

    async def _gate(self) -> None:
        # read every body before answering: one left unread on a kept-alive connection has
        # been seen to leave the client's next request there without an answer
        await request.get_data()
        limit = next((r for r in self._rate_limits if r.path.match(request.path)), None)
        if limit is not None and request.path.startswith(("/v1/", "/v2/")):
            limit.times -= 1
            if limit.times <= 0:
                self._rate_limits.remove(limit)
            raise RateLimitReached(limit.retry_after_s)
        if request.path.startswith(("/v1/", "/v2/")) and self.fail_next_requests > 0:
            self.fail_next_requests -= 1
            raise PayPalError(503, "SERVICE_UNAVAILABLE", "Simulated failure (fail_next_requests).")

    def _caller(self, browser: bool = False) -> _App:
        """The app whose token the request carries. The JS SDK's facilitator token (``browser``
        calls only: create, read and capture an order) is refused elsewhere."""
        scheme, _, token = request.headers.get("Authorization", "").partition(" ")
        token = token.strip() if scheme.lower() == "bearer" else ""
        client_id = self._tokens.get(token)
        if client_id is None and token in self._browser_tokens:
            if not browser:
                raise PayPalError(
                    403, "NOT_AUTHORIZED", NOT_AUTHORIZED, "PERMISSION_DENIED",
                    "You do not have permission to access or perform operations on this"
                    " resource.",
                )  # fmt: skip
            client_id = self._browser_tokens[token]
        if client_id is None:
            raise OAuthError(401, "invalid_token", "Token signature verification failed")
        return self._apps[client_id]

    def _from_browser(self) -> bool:
        _, _, token = request.headers.get("Authorization", "").partition(" ")
        return token.strip() in self._browser_tokens

    async def _browser_token(self) -> Any:
        """The facilitator token the JS SDK gets for the page that loaded it with the merchant's
        public client id (no secret: anyone who views the shop's page has it)."""
        client_id = request.args.get("client-id", "")
        if client_id not in self._apps:
            raise OAuthError(401, "invalid_client", "Client Authentication failed")
        token = "A21AA" + secrets.token_urlsafe(48)
        self._browser_tokens[token] = client_id
        return {"facilitatorAccessToken": token}

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

    def _replayed(self, app: _App) -> tuple[str | None, dict[str, Any] | None]:
        """The request's PayPal-Request-Id, and the stored answer of the earlier request that
        used it, whatever that request was (None when there was none)."""
        request_id = request.headers.get("PayPal-Request-Id")
        if not request_id:
            return None, None
        saved = app.requests.get(request_id)
        return request_id, copy.deepcopy(saved) if saved is not None else None

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
        """``POST /v2/checkout/orders``, by the merchant's server or by the buyer's browser
        (the JS SDK's ``actions.order.create``, with the facilitator token)."""
        app = self._caller(browser=True)
        key, saved = self._replayed(app)
        if saved is not None:
            return saved, 200
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
        refused = _money_refusal(
            unit.get("amount"), "/purchase_units/@reference_id=='default'/amount"
        )
        if refused is not None:
            raise refused
        invoice = unit.get("invoice_id")
        if invoice and invoice in app.invoices:
            raise _duplicate_invoice(invoice)
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
        if key:
            app.requests[key] = copy.deepcopy(order)
        return order, 201

    def _order(self, app: _App, order_id: str) -> _Order:
        order = app.orders.get(order_id)
        if order is None:
            raise _not_found(order_id)
        return order

    async def _get_order(self, order_id: str) -> Any:
        return self._order(self._caller(browser=True), order_id).order

    async def _capture(self, order_id: str) -> Any:
        """``POST /v2/checkout/orders/{id}/capture``, by the merchant's server or by the buyer's
        page (``actions.order.capture``)."""
        app = self._caller(browser=True)
        request_id = request.headers.get("PayPal-Request-Id")
        self.capture_calls.append(
            (order_id, request_id, "browser" if self._from_browser() else "merchant")
        )
        order = self._order(app, order_id)
        if self.hold_captures:
            raise PayPalError(503, "SERVICE_UNAVAILABLE", "Simulated outage (hold_captures).")
        key, saved = self._replayed(app)
        if saved is not None:
            return saved, 200  # whatever request used the id first: its answer, nothing done
        if order.capture_answer is not None:
            raise _unprocessable(
                "ORDER_ALREADY_CAPTURED",
                "Order already captured.If 'intent=CAPTURE' only one capture per order is allowed.",
            )
        if order.order["status"] != "APPROVED":
            raise _unprocessable(
                "ORDER_NOT_APPROVED", "Payer has not yet approved the Order for payment."
            )
        invoice = order.order["purchase_units"][0].get("invoice_id")
        if invoice and invoice in app.invoices:
            raise _duplicate_invoice(invoice)
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
        if invoice:
            app.invoices.add(invoice)
        unit = order.order["purchase_units"][0]
        unit["payments"] = {"captures": [capture]}
        order.order["status"] = "COMPLETED"
        order.order["update_time"] = objects.now_iso()
        order.capture_answer = copy.deepcopy(order.order)
        if key:
            app.requests[key] = copy.deepcopy(order.capture_answer)
        await self._emit(app, (f"PAYMENT.CAPTURE.{order.outcome}", capture))
        return order.capture_answer, 201

    async def _get_capture(self, capture_id: str) -> Any:
        app = self._caller()
        capture = app.captures.get(capture_id)
        if capture is None:
            raise _not_found(capture_id)
        return capture

    async def _refund(self, capture_id: str) -> Any:
        """``POST /v2/payments/captures/{id}/refund`` (payments_payment_v2.json
        ``refund_request``): ``amount`` (all that is left when absent), ``custom_id``,
        ``invoice_id`` and ``note_to_payer`` as the schema has them (a value that breaks its
        pattern or length is refused 400 ``INVALID_REQUEST``, issue ``INVALID_PARAMETER_SYNTAX``
        or ``INVALID_STRING_LENGTH``, captures.refund-400). Its ``PayPal-Request-Id`` answers the
        refund that request made, in its latest status ("PayPal returns the latest status of
        the previous request that used that same header",
        developer.paypal.com/api/rest/reference/idempotency), and makes no second one; while
        that refund is in progress the id is 409 (see the module's note). The refund is
        ``COMPLETED`` (``PAYMENT.CAPTURE.REFUNDED``) unless ``set_refund_outcome`` said
        otherwise; a pending or failed one sends no event (PayPal publishes none)."""
        app = self._caller()
        key, saved = self._replayed(app)
        if saved is not None:
            return saved, 200
        if key and key in app.running:
            raise PayPalError(
                409,
                "RESOURCE_CONFLICT",
                "The server has detected a conflict while processing this request.",
                "PREVIOUS_REQUEST_IN_PROGRESS",
                "A previous request on this resource is currently in progress. Please wait for"
                " sometime and try again. It is best to space out the initial and the subsequent"
                " request(s) to avoid receiving this error.",
            )
        if key:
            app.running.add(key)
        # A caller that hangs up does not stop PayPal: the server cancels a request whose
        # client has gone, so the call and its delivery are shielded, and a paused one ends at
        # ``resume_refunds`` or ``stop``.
        with trio.CancelScope(shield=True):
            try:
                if self._refunds_paused is not None:
                    await self._refunds_paused.wait()
                refund = await self._refund_of(app, capture_id)
                if key:
                    app.requests[key] = refund  # itself: a replay shows its latest status
            finally:
                if key:
                    app.running.discard(key)
            if refund["status"] == "COMPLETED":
                await self._emit(app, ("PAYMENT.CAPTURE.REFUNDED", refund))
        return refund, 201

    async def _refund_of(self, app: _App, capture_id: str) -> dict[str, Any]:
        """The refund a call asks of the capture, made; refused as PayPal refuses it."""
        capture = app.captures.get(capture_id)
        if capture is None:
            raise _not_found(capture_id)
        if capture["status"] not in ("COMPLETED", "PARTIALLY_REFUNDED"):
            raise _unprocessable(
                "CAPTURE_FULLY_REFUNDED", "The capture has already been fully refunded."
            )
        body = await self._json()
        refused = _refund_request_refusal(body)
        if refused is not None:
            raise refused
        currency = capture["amount"]["currency_code"]
        paid = Decimal(capture["amount"]["value"])
        left = paid - app.refunded.get(capture_id, Decimal(0))
        asked = body.get("amount")
        if asked is not None:
            refused = _money_refusal(asked, "/amount")
            if refused is not None:
                raise refused
            if asked.get("currency_code") != currency:
                raise _unprocessable(
                    "REFUND_CAPTURE_CURRENCY_MISMATCH",
                    "Refund must be in the same currency as the capture.",
                    "/amount/currency_code",
                    str(asked.get("currency_code")),
                )
        amount = Decimal(asked["value"]) if asked is not None else left
        if not 0 < amount <= left:
            raise _unprocessable(
                "REFUND_AMOUNT_EXCEEDED",
                "The refund amount must be less than or equal to the capture amount that has"
                " not yet been refunded.",
            )
        return self._make_refund(
            app, capture, amount, body.get("custom_id"), body.get("note_to_payer")
        )

    async def _get_refund(self, refund_id: str) -> Any:
        """``GET /v2/payments/refunds/{id}``: the refund in full (payments_payment_v2.json
        ``refund``)."""
        refund = self._caller().refunds.get(refund_id)
        if refund is None:
            raise _not_found(refund_id)
        return refund

    async def _list_disputes(self) -> Any:
        """``GET /v1/customer/disputes``: the app's disputes, newest first ("Sorted in latest to
        earliest creation time order", customer_disputes_v1.json ``dispute_search``), as
        summaries, ``disputed_transaction_id`` and ``page_size`` (1 to 50) applied; the next
        page is not offered (a capture has few disputes)."""
        app = self._caller()
        wanted = request.args.get("disputed_transaction_id")
        size = request.args.get("page_size", str(DISPUTES_PAGE))
        if not size.isdigit() or not 1 <= int(size) <= 50:
            raise _invalid_parameter("page_size", size)
        chosen = [
            d
            for d in reversed(app.disputes.values())
            if wanted is None
            or any(t.get("seller_transaction_id") == wanted for t in d["disputed_transactions"])
        ]
        answer: dict[str, Any] = {
            "links": [objects.link(f"{self.url}{request.full_path.rstrip('?')}", "self")]
        }
        if chosen:  # "items": minItems 1
            answer["items"] = [objects.dispute_summary(d) for d in chosen[: int(size)]]
        return answer

    async def _get_dispute(self, dispute_id: str) -> Any:
        """``GET /v1/customer/disputes/{id}``: the dispute in full (``dispute``)."""
        dispute = self._caller().disputes.get(dispute_id)
        if dispute is None:
            raise _not_found(dispute_id)
        return dispute

    async def _list_events(self) -> Any:
        """``GET /v1/notifications/webhooks-events`` (notifications_webhooks_v1.json
        ``EventList``): the app's events created between ``start_time`` and ``end_time`` (both
        ends included, either may be left out), newest first, ``page_size`` at a time (default
        10), the next page at the ``next`` link, shaped as PayPal's
        (``...?start_time=&end_time=&page_size=&move_to=next&index_time=&index_id=``,
        paypal/PayPal-PHP-SDK@d50d980c tests/.../WebhookFunctionalTest/testEventSearch.json;
        ``index_id`` is the position of the page's first event here). **Not verified**: the
        order PayPal lists events in, and its largest page."""
        app = self._caller()
        args = request.args
        start, end = _moment(args.get("start_time")), _moment(args.get("end_time"))
        size, index = args.get("page_size", str(EVENTS_PAGE)), args.get("index_id", "0")
        if not size.isdigit() or int(size) < 1:
            raise _invalid_parameter("page_size", size)
        if not index.isdigit():
            raise _invalid_parameter("index_id", index)
        kept = [
            e
            for e in reversed(app.events)
            if (start is None or _moment(e["create_time"]) >= start)  # type: ignore[operator]
            and (end is None or _moment(e["create_time"]) <= end)  # type: ignore[operator]
        ]
        first, size_n = int(index), int(size)
        page = kept[first : first + size_n]
        links = [objects.link(f"{self.url}{request.full_path.rstrip('?')}", "self")]
        if first + size_n < len(kept):
            query = {k: v for k, v in args.items() if k in ("start_time", "end_time", "page_size")}
            query.update(
                page_size=str(size_n),
                move_to="next",
                index_time=kept[first + size_n]["create_time"],
                index_id=str(first + size_n),
            )
            links.append(
                objects.link(
                    f"{self.url}/v1/notifications/webhooks-events/?{urlencode(query)}", "next"
                )
            )
        return {"events": page, "count": len(page), "links": links}

    async def _transactions(self, sub_id: str) -> Any:
        """``GET /v1/billing/subscriptions/{id}/transactions`` (``transactions_list``): its
        paid cycles between ``start_time`` and ``end_time`` (both required)."""
        app = self._caller()
        if sub_id not in app.subscriptions:
            raise _not_found(sub_id)
        start, end = _moment(request.args.get("start_time")), _moment(request.args.get("end_time"))
        if start is None or end is None:
            raise PayPalError(
                400,
                "INVALID_REQUEST",
                "Request is not well-formed, syntactically incorrect, or violates schema.",
                "MISSING_REQUIRED_PARAMETER",
                "A required field or parameter is missing.",
            )
        paid = [
            t
            for t in app.transactions.get(sub_id, [])
            if start <= _moment(t["time"]) <= end  # type: ignore[operator]
        ]
        return {
            "transactions": paid,
            "total_items": len(paid),
            "total_pages": 1,
            "links": [objects.link(f"{self.url}{request.full_path.rstrip('?')}", "self")],
        }

    async def _create_product(self) -> Any:
        app = self._caller()
        key, saved = self._replayed(app)
        if saved is not None:
            return saved, 200
        body = await self._json()
        if not isinstance(body.get("name"), str) or not body["name"]:
            raise PayPalError(
                400, "INVALID_REQUEST", "name is required.", "MISSING_REQUIRED_PARAMETER"
            )
        product = objects.product(self.url, body)
        app.products[product["id"]] = product
        if key:
            app.requests[key] = copy.deepcopy(product)
        return product, 201

    async def _create_plan(self) -> Any:
        app = self._caller()
        key, saved = self._replayed(app)
        if saved is not None:
            return saved, 200
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
            app.requests[key] = copy.deepcopy(plan)
        return plan, 201

    async def _get_plan(self, plan_id: str) -> Any:
        plan = self._caller().plans.get(plan_id)
        if plan is None:
            raise _not_found(plan_id)
        return plan

    async def _create_subscription(self) -> Any:
        app = self._caller()
        key, saved = self._replayed(app)
        if saved is not None:
            return saved, 200
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
            app.requests[key] = copy.deepcopy(subscription)
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

    async def _webhook(self, webhook_id: str) -> Any:
        """Show webhook details: the app's own webhooks only (another app's id is not found)."""
        app = self._caller()
        found = next((w for w in app.webhooks if w["id"] == webhook_id), None)
        if found is None:
            raise PayPalError(
                404, "INVALID_RESOURCE_ID", "Resource id is invalid.", "INVALID_RESOURCE_ID",
                "Requested resource ID was not found.",
            )  # fmt: skip
        return found

    async def _cert(self, cert_id: str) -> Any:
        if cert_id != self._cert_id:
            raise _not_found(cert_id)
        return Response(self._pem, content_type="application/x-pem-file")

    async def _sim_webhook(self) -> Any:
        """The simulator's own control (not PayPal's API): a webhook of the caller's app with
        the id given, as one made in PayPal's dashboard long ago (a test that replays genuine
        deliveries signed for that id needs the app to have it)."""
        app = self._caller()
        body = await self._json()
        webhook_id, url = body.get("id"), body.get("url")
        if not isinstance(webhook_id, str) or not webhook_id or not isinstance(url, str):
            raise PayPalError(400, "INVALID_REQUEST", "id and url are required.")
        return self._add_webhook(app, url, ["*"], webhook_id), 201

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
            if not order.cancel_url:  # the JS SDK's popup: onCancel runs in the buyer's page
                return Response(pages.closed_page("Cancelled"), content_type="text/html")
            return _see_other(_with_query(order.cancel_url, token=order_id))
        if order.order["status"] not in ("CREATED", "PAYER_ACTION_REQUIRED", "APPROVED"):
            return Response(
                pages.approval_page(order.order), content_type="text/html; charset=utf-8"
            )
        payer = objects.payer()
        order.order.update(status="APPROVED", payer=payer, update_time=objects.now_iso())
        order.decline = action == "decline"
        await self._emit(app, ("CHECKOUT.ORDER.APPROVED", order.order))
        if not order.return_url:  # the JS SDK's popup: onApprove runs in the buyer's page
            return Response(pages.closed_page("Approved"), content_type="text/html")
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
                ("PAYMENT.SALE.COMPLETED", self._sale(app, sub)),
            )
        return _see_other(
            _with_query(sub.return_url, subscription_id=obj["id"], ba_token=token, token=token)
        )


async def _render_error(error: PayPalError) -> Any:
    # async: Quart runs a plain function in an asyncio executor, which trio does not have
    body, status = error.response()
    if isinstance(error, RateLimitReached) and error.retry_after_s is not None:
        return body, status, {"Retry-After": str(error.retry_after_s)}
    return body, status


def _takes(webhook: Mapping[str, Any], event_type: str) -> bool:
    """Does the webhook subscribe to ``event_type`` (or to every event, ``*``)?"""
    names = {t["name"] for t in webhook["event_types"]}
    return "*" in names or event_type in names


def _capture_of(refund: Mapping[str, Any]) -> str:
    """The capture a refund gives money back from: its ``up`` link's last part."""
    up = next(link["href"] for link in refund["links"] if link["rel"] == "up")
    return str(up).rsplit("/", 1)[-1]


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
