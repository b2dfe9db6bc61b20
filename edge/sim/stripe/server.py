"""A loopback Stripe: the API subset the node calls, a hosted Checkout page, signed webhooks.

State is in memory and per account; an account is the secret key a request presents (any
``sk_test_...`` or ``sk_live_...`` key creates one; ``sk_live_`` objects are livemode).

API (form-encoded in, JSON out, Stripe's error shape):
``POST /v1/checkout/sessions``, ``GET /v1/checkout/sessions/{id}`` (with ``expand[]`` of
``payment_intent``, ``payment_intent.latest_charge``, ``subscription``,
``subscription.latest_invoice``, ``invoice``: docs.stripe.com/expand), ``POST /v1/prices``,
``POST /v1/payment_links``, ``GET /v1/payment_links/{id}``,
``POST|GET /v1/webhook_endpoints``, ``POST /v1/billing_portal/sessions``,
``POST /v1/refunds``, ``GET /v1/refunds`` (by ``payment_intent`` or ``charge``),
``GET /v1/refunds/{id}``, ``GET /v1/disputes`` (likewise), ``GET /v1/disputes/{id}``,
``GET /v1/radar/early_fraud_warnings`` (likewise), ``GET /v1/radar/early_fraud_warnings/{id}``,
``GET /v1/events`` (every event the account made, kept 30 days), ``GET /v1/events/{id}``.
Lists are Stripe's (``lists``): newest first, ``limit``, ``starting_after``, ``ending_before``,
``created``.
Pages: ``/c/pay/{cs_id}`` (Pay, Decline, Let expire), ``/p/session/{bps_id}``, and a payment
link's buyer address ``/b/{plink_id}`` (``?client_reference_id=`` as at
https://docs.stripe.com/payment-links/url-parameters): each visit opens a new Checkout Session
of the link, paid like any other.

Money, as Stripe refuses it (400 ``invalid_request_error`` naming the parameter): a
three-decimal currency's amount whose last digit is not 0 ("these API calls require the
least-significant (last) digit to be 0", docs.stripe.com/currencies), and more than eight
digits ("The amount value supports up to eight digits", stripe-python 16.1.0
params/_payment_intent_create_params.py:123).

Objects that belong to another are named after it (``objects.derived_id``): a session's payment
intent, that intent's charge, the subscription and customer a session starts. ``edge trigger``
(events.py) names the same ones for the node's transaction.

``Idempotency-Key`` (on ``POST /v1/checkout/sessions`` and ``POST /v1/refunds``), as Stripe
does it: "Stripe saves the status code and body of the first request made with a given
idempotency key after endpoint execution begins. Retries with the same key return the saved
response, including ``500`` errors" (docs.stripe.com/api/idempotent_requests). So a later
request with the same key and the same parameters gets that answer again
(``Idempotent-Replayed: true``) even if the object has moved on since, and a 500 of Stripe's
own (``fail_next_runs``) is answered again until the key is forgotten; the same key with other
parameters is ``400 idempotency_error``. While the first request with a key still runs
(``pause_runs``), another with it is ``409 idempotency_key_in_use`` and saves nothing: "If
incoming parameters fail validation, or the request conflicts with another request that's
executing concurrently, we don't save the idempotent result" (same page; the status in the
API's status table, docs.stripe.com/api/errors: "409 Conflict: The request conflicts with
another request (perhaps due to using the same idempotent key)"; the body as Stripe sent it in
stripe/stripe-go#647: type ``invalid_request_error``, code ``idempotency_key_in_use``, the
message below). A request refused before it ran (a bad key, parameters that fail validation,
``rate_limit_next``, ``fail_next_requests``) saves nothing, so a retry runs afresh; so does a
refusal of the run here (a charge already refunded), which Stripe would save (docs.stripe.com/
error-low-level: "A request that returns a ``400`` sends back the same ``400``"): not modelled
yet. A refund's answer is saved before its events are sent. Keys live until
``forget_idempotency_keys`` (Stripe removes them "after they're at least 24 hours old",
docs.stripe.com/api/idempotent_requests): a test's way past those 24 hours.

Money after the payment (Python API): ``refund`` (``charge.refunded`` with the charge's total
refunded, then ``refund.created``: Stripe sends both for every refund since API 2024-10-28.acacia,
docs.stripe.com/changelog/acacia/2024-10-28/refund-webhook-update), refunds held ``pending``
(``pending_refunds``) and settled (``settle_refund``), refunds that fail after they were taken
(``fail_refund``), partial disputes (``dispute(amount=...)``), early fraud warnings
(``fraud_warning``), a renewal paid (``pay_invoice``) or failed (``fail_invoice``).

Faults: ``rate_limit_next(n)`` (the next ``n`` API calls answer 429, as Stripe's rate limiter
does), ``fail_next_requests`` (500 before the API runs: Stripe down), ``fail_next_runs`` (500
from inside a keyed POST, saved under its key), ``pause_runs`` (keyed POSTs begun and not
finished), ``delay_s``; ``faults`` loses answers after the request was carried out
(``edge.sim.faults``); ``webhook_faults`` drops, holds (until ``release``) or mis-signs
deliveries.

Delivery guarantees: the events of one action are sent in order, each to every matching
endpoint of the account, each awaited (with up to ``DELIVERY_RETRIES`` quick retries) before the
next is sent and before the action's page answers; every outcome is appended to ``delivered``.
"""

from __future__ import annotations

import copy
import json
import logging
import re
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

import httpx
import trio
from quart import Response, redirect, request
from quart_trio import QuartTrio

from edge.providers.stripe import form as stripe_form
from edge.sim.faults import DROP, HOLD, MISSIGN, WRONG_SECRET, WebhookFaults
from edge.sim.loopback import LoopbackServer
from edge.sim.stripe import deliveries, lists, objects, pages
from edge.sim.stripe.events import build_event
from edge.sim.stripe.objects import THREE_DECIMAL, ZERO_DECIMAL

DELIVERY_RETRIES = 3
EVENTS_KEPT_S = 30 * 86_400  # GET /v1/events goes back 30 days
EMBEDDED = 10  # the items a list embedded in an object shows (``_embed``)
# what the session retrieve can expand here, by object (docs.stripe.com/expand)
_EXPANDABLE: Mapping[str, frozenset[str]] = {
    "checkout.session": frozenset({"payment_intent", "subscription", "invoice"}),
    "payment_intent": frozenset({"latest_charge"}),
    "subscription": frozenset({"latest_invoice"}),
}
_INTERVALS = ("day", "week", "month", "year")
MAX_AMOUNT = 99_999_999  # "up to eight digits" (stripe-python 16.1.0, see above)
# A payment link's client_reference_id: letters, digits, - and _, at most 200 characters;
# another value is dropped and the page still works (third-party account of the rule,
# https://qiita.com/hideokamoto/items/f4dc308337b0ba6e57bd; not confirmed on stripe.com)
_REFERENCE = re.compile(r"[A-Za-z0-9_-]{1,200}")
log = logging.getLogger(__name__)


class StripeError(Exception):
    """An API answer in Stripe's error shape."""

    def __init__(
        self,
        status: int,
        message: str,
        param: str | None = None,
        kind: str = "invalid_request_error",
        code: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status, self.message, self.param, self.kind = status, message, param, kind
        self.code = code

    def response(self) -> tuple[dict[str, Any], int]:
        error: dict[str, Any] = {"type": self.kind, "message": self.message}
        if self.code:
            error["code"] = self.code
        if self.param:
            error["param"] = self.param
        return {"error": error}, self.status


@dataclass
class _Checkout:
    """A session and what Stripe keeps about it beside the object (its line item)."""

    session: dict[str, Any]
    product: str
    quantity: int
    interval: str | None
    object_metadata: dict[str, str]  # payment_intent_data or subscription_data metadata
    intent: dict[str, Any] | None = None
    charge: dict[str, Any] | None = None
    dispute: dict[str, Any] | None = None
    warnings: list[dict[str, Any]] = field(default_factory=list)  # early fraud warnings


@dataclass(frozen=True)
class _Item:
    """One line item as a session or a payment link holds it."""

    name: str
    unit_amount: int
    currency: str
    quantity: int
    interval: str | None


@dataclass
class _Link:
    """A payment link and what it sells."""

    link: dict[str, Any]
    item: _Item
    object_metadata: dict[str, str]  # payment_intent_data or subscription_data metadata
    success_url: str | None  # after_completion redirect; None: Stripe's confirmation page


@dataclass(frozen=True)
class _SavedAnswer:
    """The first answer to an idempotent request, and the parameters it was made with."""

    params: dict[str, Any]
    body: dict[str, Any]
    status: int


@dataclass
class _Account:
    secret_key: str
    livemode: bool
    checkouts: dict[str, _Checkout] = field(default_factory=dict)
    idempotent: dict[str, _SavedAnswer] = field(default_factory=dict)  # by Idempotency-Key
    running: set[str] = field(default_factory=set)  # keys whose first request still runs
    prices: dict[str, dict[str, Any]] = field(default_factory=dict)
    links: dict[str, _Link] = field(default_factory=dict)
    endpoints: list[dict[str, Any]] = field(default_factory=list)
    subscriptions: dict[str, dict[str, Any]] = field(default_factory=dict)
    invoices: dict[str, dict[str, Any]] = field(default_factory=dict)
    refunds: dict[str, dict[str, Any]] = field(default_factory=dict)  # oldest first
    portal_sessions: dict[str, dict[str, Any]] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)  # as made, oldest first


class StripeSimulator(LoopbackServer):
    """Run it in a nursery: ``url = await nursery.start(sim.run)``. It stops when ``stop()`` is
    called or its nursery is cancelled. Tests may set ``fail_next_requests`` to make the next N
    ``/v1`` calls answer ``500 api_error`` before the API runs them (nothing is saved under
    their keys), ``delay_s`` to make every ``/v1`` call take that long before it runs (a slow
    way to Stripe), ``pending_refunds`` to hold new refunds pending, and ``webhook_faults`` to
    drop, hold or mis-sign deliveries (held ones wait in ``held`` until ``release``);
    ``fail_next_runs`` and ``pause_runs`` act inside the API, where keys are saved."""

    def __init__(self) -> None:
        self.fail_next_requests = 0
        self.delay_s = 0.0
        self._run_failures: list[bool] = []  # ``fail_next_runs``: did each run act first?
        self._runs_paused: trio.Event | None = None  # set by ``resume_runs``
        self.pending_refunds = False
        self.webhook_faults = WebhookFaults()
        self.delivered: list[tuple[dict[str, Any], int]] = []
        self.held: list[tuple[dict[str, Any], dict[str, Any]]] = []  # (endpoint, event)
        self._rate_limited = 0
        self._retry_after_s: int | None = None
        self._accounts: dict[str, _Account] = {}
        # keys rolled or deleted in the Dashboard: Stripe answers 401 to them
        self.refused_keys: set[str] = set()
        # API paths the account's key may not call (a restricted key without that permission)
        self.unpermitted: set[str] = set()
        super().__init__(self._build_app())

    # --- Python API for tests and the demo ----------------------------------------------

    def register_endpoint(
        self, secret_key: str, url: str, enabled_events: list[str] | None = None
    ) -> str:
        """Add a webhook endpoint to the account of ``secret_key``; returns its ``whsec_``."""
        return self._add_endpoint(self._account(secret_key), url, enabled_events or ["*"])["secret"]

    def session(self, session_id: str) -> dict[str, Any]:
        """The current checkout session object (KeyError if unknown)."""
        return self._checkout(session_id)[1].session

    def sessions(self, secret_key: str) -> list[dict[str, Any]]:
        """Every checkout session of the account of ``secret_key``, oldest first."""
        account = self._accounts.get(secret_key)
        return [c.session for c in account.checkouts.values()] if account else []

    def refunds_of(self, session_id: str) -> list[dict[str, Any]]:
        """The refunds of the session's charge, newest first (as ``GET /v1/refunds`` lists
        them)."""
        account, checkout = self._checkout(session_id)
        charge = checkout.charge["id"] if checkout.charge else None
        return [r for r in reversed(account.refunds.values()) if r["charge"] == charge]

    async def complete(self, session_id: str) -> None:
        """The buyer pays (as the Pay button)."""
        await self._pay(*self._checkout(session_id))

    async def decline(self, session_id: str) -> None:
        await self._decline(*self._checkout(session_id))

    async def expire(self, session_id: str) -> None:
        await self._expire(*self._checkout(session_id))

    async def fail_invoice(self, subscription_id: str) -> None:
        """A renewal payment fails: ``invoice.payment_failed`` and the subscription goes
        ``past_due`` (``customer.subscription.updated``)."""
        account, sub = self._subscription(subscription_id)
        sub["status"] = "past_due"
        failed = objects.invoice(
            subscription_obj=sub, billing_reason="subscription_cycle", paid=False
        )
        sub["latest_invoice"] = failed["id"]
        account.invoices[failed["id"]] = failed
        await self._emit(
            account, ("invoice.payment_failed", failed), ("customer.subscription.updated", sub)
        )

    async def pay_invoice(self, subscription_id: str) -> str:
        """A renewal is paid: ``invoice.paid`` (billing reason subscription_cycle) and, when the
        subscription was not active, ``customer.subscription.updated`` to active. Returns the
        invoice's id."""
        account, sub = self._subscription(subscription_id)
        paid = objects.invoice(subscription_obj=sub, billing_reason="subscription_cycle", paid=True)
        sub["latest_invoice"] = paid["id"]
        account.invoices[paid["id"]] = paid
        renewed: list[tuple[str, Mapping[str, Any]]] = [("invoice.paid", paid)]
        if sub["status"] != "active":
            sub["status"] = "active"
            renewed.append(("customer.subscription.updated", sub))
        await self._emit(account, *renewed)
        return str(paid["id"])

    async def refund(self, session_id: str, amount_minor: int | None = None) -> str:
        """Refund ``amount_minor`` (Stripe's units; default: what is left) of a paid
        payment-mode session, as if from Stripe's dashboard (no metadata). Returns its id."""
        account, checkout = self._checkout(session_id)
        try:
            made, told = self._refund(account, checkout, amount_minor, {})
        except StripeError as refused:
            raise ValueError(refused.message) from None
        await self._emit(account, *told)
        return str(made["id"])

    def _refund(
        self,
        account: _Account,
        checkout: _Checkout,
        amount_minor: int | None,
        metadata: Mapping[str, str],
    ) -> tuple[dict[str, Any], list[tuple[str, Mapping[str, Any]]]]:
        """What ``POST /v1/refunds`` does: the refund (succeeded, or pending while
        ``pending_refunds``), and the events that tell it: ``charge.refunded`` with the charge's
        new ``amount_refunded`` (all refunds so far, pending ones too), then ``refund.created``;
        a warning no longer actionable once the charge is refunded in full. Refused as Stripe
        refuses: a charge with nothing left (``charge_already_refunded``), more than is left
        (``amount_too_large``), a three-decimal amount whose last digit is not 0."""
        charge = checkout.charge
        if charge is None:
            raise StripeError(
                400,
                "This PaymentIntent does not have a successful charge to refund.",
                "payment_intent",
            )
        left = charge["amount"] - charge["amount_refunded"]
        amount = left if amount_minor is None else amount_minor
        if left <= 0:
            raise StripeError(
                400,
                f"Charge {charge['id']} has already been refunded.",
                code="charge_already_refunded",
            )
        if not 0 < amount <= left:
            raise StripeError(
                400,
                f"Refund amount ({amount}) is greater than unrefunded amount on charge ({left}).",
                "amount",
                code="amount_too_large",
            )
        if charge["currency"] in THREE_DECIMAL and amount % 10:
            raise StripeError(
                400, f"A {charge['currency']} refund's last digit must be 0.", "amount"
            )
        charge["amount_refunded"] += amount
        charge["refunded"] = charge["amount_refunded"] >= charge["amount"]
        status = "pending" if self.pending_refunds else "succeeded"
        made = objects.refund(charge_obj=charge, amount=amount, metadata=metadata, status=status)
        _embed(charge["refunds"], made)
        account.refunds[made["id"]] = made
        told: list[tuple[str, Mapping[str, Any]]] = [
            ("charge.refunded", charge),
            ("refund.created", made),
        ]
        if charge["refunded"]:
            told += _not_actionable(checkout)
        return made, told

    async def settle_refund(self, refund_id: str) -> None:
        """A pending refund goes through: ``status`` succeeded, told by ``refund.updated`` and
        ``charge.refund.updated`` (stripe-python 16.1.0 ``_event.py`` event types)."""
        account, refund = self._find_refund(refund_id)
        if refund["status"] != "pending":
            raise ValueError(f"{refund_id} is {refund['status']}, not pending")
        refund.pop("pending_reason", None)
        refund["status"] = "succeeded"
        await self._emit(account, ("refund.updated", refund), ("charge.refund.updated", refund))

    async def fail_refund(self, refund_id: str, reason: str = "expired_or_canceled_card") -> None:
        """A refund fails after Stripe took it (the card was closed ...): its ``status`` becomes
        failed with ``failure_reason``, Stripe gives its amount back to the merchant's balance,
        and the charge counts it no longer (``amount_refunded`` goes down by it, ``refunded``
        follows). Told by ``refund.failed``, ``charge.refund.updated`` and ``refund.updated``.

        Sources: the failure's fields, stripe-python 16.1.0 ``_refund.py`` (status,
        failure_reason, failure_balance_transaction); a genuine test-mode
        ``charge.refund.updated`` of a refund that failed this way (succeeded -> failed,
        expired_or_canceled_card: zulip/zulip ``zerver/webhooks/stripe/fixtures/
        refund_event.json``); ``refund.failed`` and ``refund.updated`` for every refund since
        2024-10-28.acacia (docs.stripe.com/changelog/acacia/2024-10-28/refund-webhook-update).
        That ``amount_refunded`` goes down: tryton's scenario
        ``modules/account_payment_stripe/tests/scenario_account_payment_stripe_refund_failure.rst``,
        run against Stripe's test mode with the card 4000000000005126 (a refund that fails
        later), reads the payment's full amount back from the charge after the failure. The
        order of the three events, and which charge event (if any) tells the lower total, are
        not verified: no ``charge.refunded`` is sent for it here."""
        account, refund = self._find_refund(refund_id)
        if refund["status"] not in ("succeeded", "pending"):
            raise ValueError(f"{refund_id} is {refund['status']}: it cannot fail now")
        failed = objects.refund_failed(refund, reason)
        refund.clear()
        refund.update(failed)
        charge = self._charge_of(account, refund["charge"])
        charge["amount_refunded"] -= refund["amount"]
        charge["refunded"] = charge["amount_refunded"] >= charge["amount"]
        await self._emit(
            account,
            ("refund.failed", refund),
            ("charge.refund.updated", refund),
            ("refund.updated", refund),
        )

    async def dispute(self, session_id: str, amount: int | None = None) -> str:
        """The buyer's bank disputes the charge, all of it or ``amount`` (Stripe's units):
        ``charge.dispute.created``. Like Stripe's, the dispute carries no metadata; it names the
        charge and the payment intent. A warning about the charge is no longer actionable ("An
        EFW is actionable if it has not received a dispute and has not been fully refunded",
        stripe-python 16.1.0 ``radar/_early_fraud_warning.py``): ``.updated``. Returns its id."""
        account, checkout = self._checkout(session_id)
        if checkout.charge is None:
            raise ValueError(f"{session_id} has no charge to dispute")
        if amount is not None and not 0 < amount <= checkout.charge["amount"]:
            raise ValueError(f"a dispute of {amount} is not part of {checkout.charge['amount']}")
        checkout.charge["disputed"] = True
        checkout.dispute = objects.dispute(charge_obj=checkout.charge, amount=amount)
        await self._emit(
            account, ("charge.dispute.created", checkout.dispute), *_not_actionable(checkout)
        )
        return str(checkout.dispute["id"])

    async def close_dispute(self, session_id: str, status: str = "won") -> None:
        """``charge.dispute.closed`` with ``status`` won, lost or warning_closed."""
        account, checkout = self._checkout(session_id)
        if checkout.dispute is None:
            raise ValueError(f"{session_id} has no open dispute")
        checkout.dispute["status"] = status
        await self._emit(account, ("charge.dispute.closed", checkout.dispute))

    async def fraud_warning(self, session_id: str, fraud_type: str = "misc") -> str:
        """The card's issuer warns that the payment may be fraud: an early fraud warning about
        the session's charge, ``radar.early_fraud_warning.created`` (stripe-python 16.1.0
        ``radar/_early_fraud_warning.py``, ``_event.py``); actionable unless the charge was
        refunded in full or disputed. Returns its id."""
        account, checkout = self._checkout(session_id)
        charge = checkout.charge
        if charge is None:
            raise ValueError(f"{session_id} has no charge to warn about")
        warning = objects.early_fraud_warning(
            charge_obj=charge,
            fraud_type=fraud_type,
            actionable=not (charge["refunded"] or charge["disputed"]),
        )
        checkout.warnings.insert(0, warning)
        await self._emit(account, ("radar.early_fraud_warning.created", warning))
        return str(warning["id"])

    def fail_next_runs(self, n: int = 1, acted: bool = False) -> None:
        """The next ``n`` keyed POSTs (``POST /v1/checkout/sessions``, ``POST /v1/refunds``)
        fail inside Stripe's API once it has begun them: ``500 api_error``, saved under the
        ``Idempotency-Key`` like any answer, so every retry with the key gets that 500 again
        (``Idempotent-Replayed``) until the key is forgotten; unlike ``fail_next_requests``,
        which answers before the API and saves nothing. Stripe does not say whether such a
        request made its object: ``acted`` makes it (the session, or the refund with its
        events) before the 500, so only Stripe's lists and events tell."""
        self._run_failures += [acted] * n

    def pause_runs(self) -> None:
        """From now on each keyed POST, once Stripe has begun it, waits for ``resume_runs``
        with its key in use (``in_progress``): the time in which a second request with the key
        is ``409 idempotency_key_in_use``, as when the caller gave up on a slow answer and
        retried."""
        if self._runs_paused is None:
            self._runs_paused = trio.Event()

    def resume_runs(self) -> None:
        """Let every paused run finish (its answer saved, then its events sent); later runs are
        not paused."""
        paused, self._runs_paused = self._runs_paused, None
        if paused is not None:
            paused.set()

    def stop(self) -> None:
        self.resume_runs()  # a paused run is shielded from cancellation: it would hold on
        super().stop()

    def in_progress(self, secret_key: str) -> frozenset[str]:
        """The account's ``Idempotency-Key`` values whose first request still runs."""
        account = self._accounts.get(secret_key)
        return frozenset(account.running) if account else frozenset()

    def forget_idempotency_keys(self) -> None:
        """Forget every saved ``Idempotency-Key`` answer, as Stripe does 24 hours on: a request
        with a key used before runs afresh."""
        for account in self._accounts.values():
            account.idempotent.clear()

    def rate_limit_next(self, n: int = 1, retry_after_s: int | None = None) -> None:
        """The next ``n`` ``/v1`` calls answer ``429`` as Stripe's rate limiter does, before
        they run (so they save no idempotent answer): error code ``rate_limit`` (the code of
        "Too many requests hit the API too quickly", docs.stripe.com/error-codes; stripe-python
        16.1.0 lists it among the API's error codes, ``_payment_intent.py``
        ``LastPaymentError.code``; type ``invalid_request_error``, as a 429 body quoted in
        codecombat/codecombat#2588 shows). Stripe documents no ``Retry-After`` on it
        (docs.stripe.com/rate-limits asks for exponential backoff, and stripe-python 16.1.0's
        retry rule, ``_http_client.py`` ``_should_retry``, reads ``Stripe-Should-Retry`` only):
        none is sent unless ``retry_after_s`` asks for one, for testing a client that honours
        it."""
        self._rate_limited = n
        self._retry_after_s = retry_after_s

    async def send(self, secret_key: str, event: Mapping[str, Any]) -> list[int]:
        """Deliver ``event`` to the account's endpoints that take its type, each as
        ``webhook_faults`` says (sent, dropped, held until ``release``, or signed with a wrong
        secret); the final status of each delivery sent (0 when the endpoint could not be
        reached)."""
        account = self._account(secret_key)
        takers = [e for e in account.endpoints if _takes(e, event["type"])]
        outgoing: list[tuple[dict[str, Any], str]] = []
        for endpoint in takers:
            verdict = self.webhook_faults.verdict(event["type"])
            if verdict == HOLD:
                self.held.append((endpoint, dict(event)))
            elif verdict != DROP:
                outgoing.append((endpoint, WRONG_SECRET if verdict == MISSIGN else ""))
        return await self._deliver([(e, event, wrong) for e, wrong in outgoing])

    async def release(self) -> list[int]:
        """Deliver what ``webhook_faults`` held, in order; each delivery's final status."""
        held, self.held = self.held, []
        return await self._deliver([(endpoint, event, "") for endpoint, event in held])

    async def _deliver(
        self, deliveries: list[tuple[dict[str, Any], Mapping[str, Any], str]]
    ) -> list[int]:
        """POST each (endpoint, event, a wrong secret to sign with or ""), in order, each
        outcome appended to ``delivered``."""
        statuses: list[int] = []
        if not deliveries:
            return statuses
        async with httpx.AsyncClient(timeout=10.0) as client:
            for endpoint, event, wrong_secret in deliveries:
                body = json.dumps(event).encode()
                status = await _post_signed(
                    client, endpoint["url"], wrong_secret or endpoint["secret"], body
                )
                self.delivered.append((dict(event), status))
                statuses.append(status)
        return statuses

    # --- state ------------------------------------------------------------------------

    def _account(self, secret_key: str) -> _Account:
        if not secret_key.startswith(("sk_test_", "sk_live_")) or secret_key in self.refused_keys:
            # Stripe shows the key's prefix and last four characters only
            shown = secret_key[:8] + "*" * max(0, len(secret_key) - 12) + secret_key[-4:]
            raise StripeError(401, f"Invalid API Key provided: {shown}")
        account = self._accounts.get(secret_key)
        if account is None:
            account = _Account(secret_key, livemode=secret_key.startswith("sk_live_"))
            self._accounts[secret_key] = account
        return account

    def _checkout(self, session_id: str) -> tuple[_Account, _Checkout]:
        for account in self._accounts.values():
            if session_id in account.checkouts:
                return account, account.checkouts[session_id]
        raise KeyError(session_id)

    def _subscription(self, subscription_id: str) -> tuple[_Account, dict[str, Any]]:
        for account in self._accounts.values():
            if subscription_id in account.subscriptions:
                return account, account.subscriptions[subscription_id]
        raise KeyError(subscription_id)

    def _find_refund(self, refund_id: str) -> tuple[_Account, dict[str, Any]]:
        for account in self._accounts.values():
            if refund_id in account.refunds:
                return account, account.refunds[refund_id]
        raise KeyError(refund_id)

    def _charge_of(self, account: _Account, charge_id: str) -> dict[str, Any]:
        found = self._object(account, charge_id)
        if found is None:
            raise KeyError(charge_id)
        return found

    def _object(self, account: _Account, object_id: str) -> dict[str, Any] | None:
        """The account's object of that id, among those ``expand`` can name."""
        for checkout in account.checkouts.values():
            for kept in (checkout.intent, checkout.charge):
                if kept is not None and kept["id"] == object_id:
                    return kept
        return account.subscriptions.get(object_id) or account.invoices.get(object_id)

    def _add_endpoint(self, account: _Account, url: str, enabled: list[str]) -> dict[str, Any]:
        endpoint = objects.webhook_endpoint(
            livemode=account.livemode,
            url=url,
            enabled_events=enabled,
            secret="whsec_" + secrets.token_urlsafe(24),
        )
        account.endpoints.append(endpoint)
        return endpoint

    async def _emit(self, account: _Account, *events: tuple[str, Mapping[str, Any]]) -> None:
        """Make each event (kept for ``GET /v1/events``) and deliver it."""
        for event_type, obj in events:
            event = build_event(event_type, obj, account.livemode)
            account.events.append(copy.deepcopy(event))
            await self.send(account.secret_key, event)

    # --- the buyer's actions ------------------------------------------------------------

    async def _pay(self, account: _Account, checkout: _Checkout) -> None:
        session = checkout.session
        if session["status"] != "open":
            return  # paid twice (a double click) or too late: nothing happens
        session.update(status="complete", payment_status="paid", url=None)  # url: open only
        if session["mode"] == "payment":
            intent = self._intent(account, checkout)
            charge = objects.charge(
                livemode=account.livemode,
                amount=intent["amount"],
                currency=intent["currency"],
                payment_intent_id=intent["id"],
                metadata=intent["metadata"],
                charge_id=objects.derived_id("ch", intent["id"]),
            )
            intent.update(status="succeeded", amount_received=intent["amount"],
                          latest_charge=charge["id"], last_payment_error=None)  # fmt: skip
            checkout.charge = charge
            await self._emit(account, ("checkout.session.completed", session))
            return
        customer = objects.customer(
            livemode=account.livemode, customer_id=objects.derived_id("cus", session["id"])
        )
        sub = objects.subscription(
            livemode=account.livemode,
            customer_id=customer["id"],
            amount=session["amount_total"],
            currency=session["currency"],
            interval=checkout.interval or "month",
            product_name=checkout.product,
            metadata=checkout.object_metadata,
            subscription_id=objects.derived_id("sub", session["id"]),
        )
        first = objects.invoice(
            subscription_obj=sub, billing_reason="subscription_create", paid=True
        )
        sub["latest_invoice"] = first["id"]
        account.subscriptions[sub["id"]] = sub
        account.invoices[first["id"]] = first
        session.update(customer=customer["id"], subscription=sub["id"], invoice=first["id"])
        await self._emit(
            account,
            ("customer.subscription.created", sub),
            ("invoice.paid", first),
            ("checkout.session.completed", session),
        )

    async def _decline(self, account: _Account, checkout: _Checkout) -> None:
        if checkout.session["status"] != "open":
            return
        intent = self._intent(account, checkout)
        intent.update(
            status="requires_payment_method", last_payment_error=objects.card_declined_error()
        )
        await self._emit(account, ("payment_intent.payment_failed", intent))

    async def _expire(self, account: _Account, checkout: _Checkout) -> None:
        session = checkout.session
        if session["status"] != "open":
            return
        session.update(status="expired", url=None)
        await self._emit(account, ("checkout.session.expired", session))

    def _intent(self, account: _Account, checkout: _Checkout) -> dict[str, Any]:
        """The session's payment intent, made on the first attempt as Stripe does."""
        if checkout.intent is None:
            session = checkout.session
            checkout.intent = objects.payment_intent(
                livemode=account.livemode,
                amount=session["amount_total"],
                currency=session["currency"],
                metadata=checkout.object_metadata,
                intent_id=objects.derived_id("pi", session["id"]),
            )
            if session["mode"] == "payment":
                session["payment_intent"] = checkout.intent["id"]
        return checkout.intent

    # --- HTTP -------------------------------------------------------------------------

    def _build_app(self) -> QuartTrio:
        app = QuartTrio(__name__)
        app.register_error_handler(StripeError, _render_error)
        app.register_error_handler(lists.ListError, _render_list_error)
        app.before_request(self._gate)
        app.add_url_rule("/v1/checkout/sessions", view_func=self._create_session, methods=["POST"])
        app.add_url_rule("/v1/checkout/sessions", view_func=self._list_sessions)
        app.add_url_rule("/v1/checkout/sessions/<session_id>", view_func=self._get_session)
        app.add_url_rule("/v1/prices", view_func=self._create_price, methods=["POST"])
        app.add_url_rule("/v1/refunds", view_func=self._create_refund, methods=["POST"])
        app.add_url_rule("/v1/refunds", view_func=self._list_refunds, methods=["GET"])
        app.add_url_rule("/v1/refunds/<refund_id>", view_func=self._get_refund)
        app.add_url_rule("/v1/disputes", view_func=self._list_disputes)
        app.add_url_rule("/v1/disputes/<dispute_id>", view_func=self._get_dispute)
        app.add_url_rule("/v1/radar/early_fraud_warnings", view_func=self._list_warnings)
        app.add_url_rule("/v1/radar/early_fraud_warnings/<warning_id>", view_func=self._get_warning)
        app.add_url_rule("/v1/events", view_func=self._list_events)
        app.add_url_rule("/v1/events/<event_id>", view_func=self._get_event)
        app.add_url_rule("/v1/payment_links", view_func=self._create_link, methods=["POST"])
        app.add_url_rule("/v1/payment_links/<link_id>", view_func=self._get_link)
        app.add_url_rule("/b/<link_id>", view_func=self._open_link)
        app.add_url_rule("/b/<link_id>/thanks", view_func=self._link_thanks)
        app.add_url_rule(
            "/v1/webhook_endpoints", view_func=self._endpoints, methods=["GET", "POST"]
        )
        app.add_url_rule("/v1/billing_portal/sessions", view_func=self._portal, methods=["POST"])
        app.add_url_rule("/c/pay/<session_id>", view_func=self._checkout_page)
        app.add_url_rule("/c/pay/<session_id>/<action>", view_func=self._act, methods=["POST"])
        app.add_url_rule("/p/session/<portal_id>", view_func=self._portal_page)
        app.add_url_rule(
            "/p/session/<portal_id>/cancel", view_func=self._portal_cancel, methods=["POST"]
        )
        return app

    async def _gate(self) -> Any:
        if request.path.startswith("/v1/") and self.delay_s:
            await trio.sleep(self.delay_s)
        if request.path.startswith("/v1/") and self._rate_limited > 0:
            self._rate_limited -= 1
            return self._rate_limit_answer()
        if request.path.startswith("/v1/") and self.fail_next_requests > 0:
            self.fail_next_requests -= 1
            raise StripeError(500, "Simulated failure (fail_next_requests).", kind="api_error")
        if any(request.path.startswith(path) for path in self.unpermitted):
            # as Stripe refuses a restricted key (docs.stripe.com/keys#limit-access)
            raise StripeError(
                403,
                "The provided key does not have the required permissions for this endpoint"
                " on this account.",
            )

    def _rate_limit_answer(self) -> Response:
        body = StripeError(
            429,
            "Request rate limit exceeded. Learn more about rate limits here"
            " https://stripe.com/docs/rate-limits.",
            code="rate_limit",
        ).response()[0]
        answer = Response(json.dumps(body), status=429, content_type="application/json")
        if self._retry_after_s is not None:
            answer.headers["Retry-After"] = str(self._retry_after_s)
        return answer

    def _caller(self) -> _Account:
        scheme, _, key = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not key:
            raise StripeError(401, "You did not provide an API key.")
        return self._account(key.strip())

    async def _create_session(self) -> Any:
        account = self._caller()
        params = await _form()
        key, replayed = _replayed(account, params)
        if replayed is not None:
            return replayed
        checkout = _new_checkout(account, params, self.url)

        def make() -> tuple[dict[str, Any], list[tuple[str, Mapping[str, Any]]]]:
            account.checkouts[checkout.session["id"]] = checkout
            return checkout.session, []

        return await self._run(account, key, params, make)

    async def _create_refund(self) -> Any:
        """``POST /v1/refunds`` on a ``payment_intent`` (or ``charge``) of a session paid here,
        with an ``Idempotency-Key`` kept like any other request's."""
        account = self._caller()
        params = await _form()
        key, replayed = _replayed(account, params)
        if replayed is not None:
            return replayed
        named = params.get("payment_intent") or params.get("charge")
        checkout = next(
            (
                c
                for c in account.checkouts.values()
                if named in ((c.intent or {}).get("id"), (c.charge or {}).get("id"))
            ),
            None,
        )
        if checkout is None:
            raise StripeError(404, f"No such payment_intent: '{named}'", "payment_intent")
        amount = params.get("amount")
        asked = _positive_int(amount, "amount") if amount is not None else None
        metadata = _metadata(params.get("metadata"), "metadata")
        return await self._run(
            account, key, params, lambda: self._refund(account, checkout, asked, metadata)
        )

    async def _run(
        self,
        account: _Account,
        key: str | None,
        params: dict[str, Any],
        act: Callable[[], tuple[dict[str, Any], list[tuple[str, Mapping[str, Any]]]]],
    ) -> tuple[dict[str, Any], int]:
        """A keyed POST from where Stripe's API begins it (its parameters valid): ``act``
        makes the object and says the events that tell it. The key is in use until the answer
        is saved under it, so a request with it meanwhile is refused and saves nothing; the
        answer is saved before anything is told, so a retry during the deliveries gets it. A
        refusal by ``act`` saves nothing (see the module's note)."""
        if key and key in account.running:
            raise StripeError(
                409,
                "There is currently another in-progress request using this Idempotent Key (that"
                " probably means you submitted twice, and the other request is still going"
                f" through): {key}. Please try again later.",
                code="idempotency_key_in_use",
            )
        if key:
            account.running.add(key)
        told: list[tuple[str, Mapping[str, Any]]] = []
        # A caller that hangs up does not stop Stripe: the server cancels a request whose
        # client has gone, so the run and its deliveries are shielded, and a paused run ends
        # at ``resume_runs`` or ``stop``.
        with trio.CancelScope(shield=True):
            try:
                if self._runs_paused is not None:
                    await self._runs_paused.wait()
                acted_first = self._run_failures.pop(0) if self._run_failures else None
                if acted_first is None:
                    made, told = act()
                    answer, status = copy.deepcopy(made), 200
                else:
                    if acted_first:
                        _, told = act()
                    answer, status = StripeError(
                        500, "Simulated failure inside the API (fail_next_runs).", kind="api_error"
                    ).response()
                if key:
                    account.idempotent[key] = _SavedAnswer(params, copy.deepcopy(answer), status)
            finally:
                if key:
                    account.running.discard(key)
            await self._emit(account, *told)
        return answer, status

    async def _get_session(self, session_id: str) -> Any:
        """The session, with what ``expand[]`` names in place of its ids (docs.stripe.com/
        expand: "expand[]=payment_intent.latest_charge" ...); an unknown session is 404
        ``resource_missing``, like every object Stripe does not hold."""
        account = self._caller()
        checkout = account.checkouts.get(session_id)
        if checkout is None:
            raise _missing("checkout.session", session_id)
        return self._expanded(account, checkout.session, _query().get("expand") or [])

    def _expanded(self, account: _Account, obj: dict[str, Any], paths: Any) -> dict[str, Any]:
        """A copy of ``obj`` with each of ``paths`` (``a.b``: expand ``a``, then its ``b``)
        expanded; a path this simulator cannot expand is refused, as Stripe refuses a field
        that is not expandable (its message is not verified)."""
        shown = copy.deepcopy(obj)
        for n, path in enumerate(paths if isinstance(paths, list) else [paths]):
            node: Any = shown
            for name in str(path).split("."):
                if node is None:  # nothing there yet (no payment intent): null stays null
                    break
                if name not in _EXPANDABLE.get(node.get("object"), ()):
                    raise StripeError(
                        400, f"This property cannot be expanded ({path}).", f"expand[{n}]"
                    )
                if isinstance(node.get(name), str):
                    found = self._object(account, node[name])
                    node[name] = copy.deepcopy(found) if found is not None else node[name]
                node = node.get(name)
        return shown

    async def _list_refunds(self) -> Any:
        account, query = self._caller(), _query()
        newest = [r for r in reversed(account.refunds.values()) if _names(r, query)]
        return lists.page(newest, query, "/v1/refunds")

    async def _get_refund(self, refund_id: str) -> Any:
        refund = self._caller().refunds.get(refund_id)
        if refund is None:
            raise _missing("refund", refund_id)
        return refund

    def _disputes(self, account: _Account) -> list[dict[str, Any]]:
        found = [c.dispute for c in account.checkouts.values() if c.dispute is not None]
        return sorted(found, key=lambda d: d["created"], reverse=True)

    async def _list_disputes(self) -> Any:
        account, query = self._caller(), _query()
        newest = [d for d in self._disputes(account) if _names(d, query)]
        return lists.page(newest, query, "/v1/disputes")

    async def _get_dispute(self, dispute_id: str) -> Any:
        found = [d for d in self._disputes(self._caller()) if d["id"] == dispute_id]
        if not found:
            raise _missing("dispute", dispute_id)
        return found[0]

    def _warnings(self, account: _Account) -> list[dict[str, Any]]:
        found = [w for c in account.checkouts.values() for w in c.warnings]
        return sorted(found, key=lambda w: w["created"], reverse=True)

    async def _list_warnings(self) -> Any:
        account, query = self._caller(), _query()
        newest = [w for w in self._warnings(account) if _names(w, query)]
        return lists.page(newest, query, "/v1/radar/early_fraud_warnings")

    async def _get_warning(self, warning_id: str) -> Any:
        found = [w for w in self._warnings(self._caller()) if w["id"] == warning_id]
        if not found:
            raise _missing("radar.early_fraud_warning", warning_id)
        return found[0]

    def _kept_events(self, account: _Account) -> list[dict[str, Any]]:
        """The account's events of the last 30 days, newest first ("List events, going back
        up to 30 days", stripe-python 16.1.0 ``_event.py``)."""
        since = objects.now_s() - EVENTS_KEPT_S
        return [e for e in reversed(account.events) if e["created"] >= since]

    async def _list_sessions(self) -> Any:
        """``GET /v1/checkout/sessions``: the account's sessions, newest first."""
        account, query = self._caller(), _query()
        newest = [c.session for c in reversed(account.checkouts.values())]
        return lists.page(newest, query, "/v1/checkout/sessions")

    async def _list_events(self) -> Any:
        """``GET /v1/events``: ``type`` (one type) or ``types`` (a list) as EventListParams
        has them, and Stripe's list parameters."""
        account, query = self._caller(), _query()
        wanted = query.get("types") or ([query["type"]] if "type" in query else None)
        newest = [e for e in self._kept_events(account) if wanted is None or e["type"] in wanted]
        return lists.page(newest, query, "/v1/events")

    async def _get_event(self, event_id: str) -> Any:
        found = [e for e in self._kept_events(self._caller()) if e["id"] == event_id]
        if not found:
            raise _missing("event", event_id)
        return found[0]

    async def _create_price(self) -> Any:
        account = self._caller()
        params = await _form()
        item = _price_item(params, "", quantity=1)
        product = params.get("product")
        price = objects.price_object(
            livemode=account.livemode,
            amount=item.unit_amount,
            currency=item.currency,
            nickname=params.get("nickname") if isinstance(params.get("nickname"), str) else None,
            interval=item.interval,
            product=product if isinstance(product, str) else None,
            metadata=_metadata(params.get("metadata"), "metadata"),
        )
        account.prices[price["id"]] = {**price, "_name": item.name}
        return price

    async def _create_link(self) -> Any:
        """``POST /v1/payment_links``: one line item, of a ``price`` made before or of inline
        ``price_data`` (PaymentLinkCreateParamsLineItem: "One of `price` or `price_data` is
        required", stripe-python 16.1.0 params/_payment_link_create_params.py:544-552)."""
        account = self._caller()
        params = await _form()
        items = params.get("line_items")
        if not isinstance(items, list) or len(items) != 1 or not isinstance(items[0], dict):
            raise StripeError(400, "Exactly one line item is supported.", "line_items")
        line = items[0]
        if "quantity" not in line:
            raise StripeError(
                400, "Missing required param: line_items[0][quantity].", "line_items[0][quantity]"
            )
        quantity = _positive_int(line.get("quantity"), "line_items[0][quantity]")
        price_id = line.get("price")
        if isinstance(price_id, str):
            price = account.prices.get(price_id)
            if price is None:
                raise StripeError(
                    400, f"No such price: '{price_id}'", "line_items[0][price]",
                    code="resource_missing",
                )  # fmt: skip
            recurring = price["recurring"]
            item = _Item(
                price["_name"],
                price["unit_amount"],
                price["currency"],
                quantity,
                recurring["interval"] if recurring else None,
            )
        elif isinstance(line.get("price_data"), dict):
            item = _price_item(line["price_data"], "line_items[0][price_data]", quantity)
        else:
            raise StripeError(
                400, "One of `price` or `price_data` is required.", "line_items[0][price]"
            )
        _charge_rules(item, "line_items[0]")
        mode_data = params.get("subscription_data" if item.interval else "payment_intent_data")
        object_metadata = _metadata(
            mode_data.get("metadata") if isinstance(mode_data, dict) else None,
            f"{'subscription' if item.interval else 'payment_intent'}_data[metadata]",
        )
        after = params.get("after_completion")
        redirect_to = None
        if isinstance(after, dict) and after.get("type") == "redirect":
            target = after.get("redirect")
            redirect_to = target.get("url") if isinstance(target, dict) else None
            if not isinstance(redirect_to, str) or not redirect_to:
                raise StripeError(
                    400,
                    "Missing required param: after_completion[redirect][url].",
                    "after_completion[redirect][url]",
                )
        link_id = objects.new_id("plink")
        link = objects.payment_link(
            livemode=account.livemode,
            currency=item.currency,
            url=f"{self.url}/b/{link_id}",
            metadata=_metadata(params.get("metadata"), "metadata"),
            payment_intent_metadata=None if item.interval else object_metadata,
            after_completion={"redirect": {"url": redirect_to}, "type": "redirect"}
            if redirect_to
            else None,
            link_id=link_id,
        )
        account.links[link_id] = _Link(link, item, object_metadata, redirect_to)
        return link

    async def _get_link(self, link_id: str) -> Any:
        link = self._caller().links.get(link_id)
        if link is None:
            raise StripeError(
                404, f"No such payment_link: '{link_id}'", "id", code="resource_missing"
            )
        return link.link

    def _find_link(self, link_id: str) -> tuple[_Account, _Link] | None:
        for account in self._accounts.values():
            if link_id in account.links:
                return account, account.links[link_id]
        return None

    async def _open_link(self, link_id: str) -> Any:
        """A buyer opens the link: a new Checkout Session of it, with ``payment_link`` set, the
        link's metadata (copied to "checkout sessions created by this payment link",
        _payment_link_create_params.py:75-78) and ``client_reference_id`` from the address."""
        found = self._find_link(link_id)
        if found is None or not found[1].link["active"]:
            return _html("<h1>This link is no longer active</h1>", 404)
        account, link = found
        reference = request.args.get("client_reference_id")
        session_id = objects.new_id("cs", account.livemode)
        item = link.item
        session = objects.checkout_session(
            session_id=session_id,
            livemode=account.livemode,
            mode="subscription" if item.interval else "payment",
            amount_total=item.unit_amount * item.quantity,
            currency=item.currency,
            success_url=link.success_url or f"{self.url}/b/{link_id}/thanks",
            cancel_url=None,
            url=f"{self.url}/c/pay/{session_id}",
            client_reference_id=reference
            if reference and _REFERENCE.fullmatch(reference)
            else None,
            metadata=link.link["metadata"],
        )
        session["payment_link"] = link_id
        account.checkouts[session_id] = _Checkout(
            session, item.name, item.quantity, item.interval, dict(link.object_metadata)
        )
        return redirect(session["url"], 303)

    async def _link_thanks(self, link_id: str) -> Any:
        return _html("<h1>Thanks for your payment</h1>")

    async def _endpoints(self) -> Any:
        account = self._caller()
        if request.method == "GET":
            listed = [{k: v for k, v in e.items() if k != "secret"} for e in account.endpoints]
            return {
                "object": "list",
                "data": listed,
                "has_more": False,
                "url": "/v1/webhook_endpoints",
            }
        params = await _form()
        url, enabled = params.get("url"), params.get("enabled_events")
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise StripeError(400, "Missing or invalid url.", "url")
        if not isinstance(enabled, list) or not all(isinstance(e, str) for e in enabled):
            raise StripeError(
                400, "enabled_events must be a list of event types.", "enabled_events"
            )
        return self._add_endpoint(account, url, enabled)

    async def _portal(self) -> Any:
        account = self._caller()
        params = await _form()
        customer = params.get("customer")
        if not isinstance(customer, str) or not customer.startswith("cus_"):
            raise StripeError(400, "Missing or invalid customer.", "customer")
        return_url = params.get("return_url")
        portal = objects.billing_portal_session(
            livemode=account.livemode,
            customer_id=customer,
            return_url=return_url if isinstance(return_url, str) else None,
            url_base=self.url,
        )
        account.portal_sessions[portal["id"]] = portal
        return portal

    async def _checkout_page(self, session_id: str) -> Any:
        try:
            _, checkout = self._checkout(session_id)
        except KeyError:
            return _html("<h1>No such checkout session</h1>", 404)
        note = "Your card was declined. Try another card." if request.args.get("declined") else ""
        page = pages.checkout_page(
            checkout.session, checkout.product, checkout.quantity, checkout.interval, note
        )
        return _html(page)

    async def _act(self, session_id: str, action: str) -> Any:
        try:
            account, checkout = self._checkout(session_id)
        except KeyError:
            return _html("<h1>No such checkout session</h1>", 404)
        session = checkout.session
        if action == "pay":
            await self._pay(account, checkout)
            if session["status"] == "complete":
                return redirect(_fill(session["success_url"], session_id), 303)
        elif action == "decline":
            await self._decline(account, checkout)
            return redirect(f"/c/pay/{session_id}?declined=1", 303)
        elif action == "expire":
            await self._expire(account, checkout)
            if session["status"] == "expired":
                return redirect(_fill(session["cancel_url"], session_id), 303)
        else:
            return _html("<h1>Unknown action</h1>", 404)
        return redirect(f"/c/pay/{session_id}", 303)

    def _find_portal(self, portal_id: str) -> tuple[_Account, dict[str, Any]] | None:
        for account in self._accounts.values():
            if portal_id in account.portal_sessions:
                return account, account.portal_sessions[portal_id]
        return None

    async def _portal_page(self, portal_id: str) -> Any:
        found = self._find_portal(portal_id)
        if found is None:
            return _html("<h1>No such portal session</h1>", 404)
        account, portal = found
        subs = [s for s in account.subscriptions.values() if s["customer"] == portal["customer"]]
        return _html(pages.portal_page(portal, subs))

    async def _portal_cancel(self, portal_id: str) -> Any:
        found = self._find_portal(portal_id)
        if found is None:
            return _html("<h1>No such portal session</h1>", 404)
        account, portal = found
        sub = account.subscriptions.get((await request.form).get("subscription", ""))
        if (
            sub is not None
            and sub["customer"] == portal["customer"]
            and sub["status"] != "canceled"
        ):
            now = objects.now_s()
            sub.update(status="canceled", canceled_at=now, ended_at=now)
            await self._emit(account, ("customer.subscription.deleted", sub))
        return redirect(f"/p/session/{portal_id}", 303)


def _not_actionable(checkout: _Checkout) -> list[tuple[str, Mapping[str, Any]]]:
    """The charge's actionable warnings made not actionable, each told by
    ``radar.early_fraud_warning.updated`` (the charge was disputed or refunded in full)."""
    told: list[tuple[str, Mapping[str, Any]]] = []
    for warning in checkout.warnings:
        if warning["actionable"]:
            warning["actionable"] = False
            told.append(("radar.early_fraud_warning.updated", warning))
    return told


def _embed(sublist: dict[str, Any], item: dict[str, Any]) -> None:
    """Put ``item`` first in a list an object embeds (a charge's ``refunds``), which shows the
    newest ``EMBEDDED`` and says ``has_more`` past them, as a list page does; the rest is read
    with the list's own route. How many Stripe embeds is not verified: the default page size
    ("the default is 10", RefundListParams.limit) stands for it."""
    data = [item, *sublist["data"]]
    sublist.update(data=data[:EMBEDDED], has_more=len(data) > EMBEDDED or sublist["has_more"])


def _names(obj: Mapping[str, Any], query: Mapping[str, Any]) -> bool:
    """Does a refund, dispute or warning belong to the ``payment_intent`` and ``charge`` the
    list asks for (RefundListParams, DisputeListParams, EarlyFraudWarningListParams)?"""
    return all(
        query.get(key) is None or obj.get(key) == query.get(key)
        for key in ("payment_intent", "charge")
    )


def _missing(kind: str, object_id: str) -> StripeError:
    """Stripe's answer for an object it does not hold: 404 ``resource_missing``."""
    return StripeError(404, f"No such {kind}: '{object_id}'", "id", code="resource_missing")


def _new_checkout(account: _Account, params: Mapping[str, Any], base_url: str) -> _Checkout:
    """Validate ``POST /v1/checkout/sessions`` parameters the way Stripe does for the subset
    the simulator knows (one line item with ``price_data``) and make the session."""
    mode = params.get("mode")
    if mode not in ("payment", "subscription"):
        raise StripeError(400, "mode must be payment or subscription.", "mode")
    items = params.get("line_items")
    if not isinstance(items, list) or len(items) != 1 or not isinstance(items[0], dict):
        raise StripeError(400, "Exactly one line item is supported.", "line_items")
    price = items[0].get("price_data")
    if not isinstance(price, dict):
        raise StripeError(
            400, "line_items[0][price_data] is required.", "line_items[0][price_data]"
        )
    quantity = _positive_int(items[0].get("quantity", "1"), "line_items[0][quantity]")
    item = _price_item(price, "line_items[0][price_data]", quantity)
    if mode == "subscription" and item.interval is None:
        raise StripeError(
            400,
            "A recurring interval is required.",
            "line_items[0][price_data][recurring][interval]",
        )
    _charge_rules(item, "line_items[0]")
    success_url = params.get("success_url")
    if not isinstance(success_url, str) or not success_url:
        raise StripeError(400, "success_url is required.", "success_url")
    object_data = params.get("payment_intent_data" if mode == "payment" else "subscription_data")
    session_id = objects.new_id("cs", account.livemode)
    session = objects.checkout_session(
        session_id=session_id,
        livemode=account.livemode,
        mode=mode,
        amount_total=item.unit_amount * quantity,
        currency=item.currency,
        success_url=success_url,
        cancel_url=params.get("cancel_url"),
        url=f"{base_url}/c/pay/{session_id}",
        client_reference_id=params.get("client_reference_id"),
        metadata=_metadata(params.get("metadata"), "metadata"),
    )
    object_metadata = _metadata(
        object_data.get("metadata") if isinstance(object_data, dict) else None,
        f"{'payment_intent' if mode == 'payment' else 'subscription'}_data[metadata]",
    )
    return _Checkout(
        session,
        item.name,
        quantity,
        item.interval if mode == "subscription" else None,
        object_metadata,
    )


def _price_item(price: Mapping[str, Any], prefix: str, quantity: int) -> _Item:
    """A price's parameters (``price_data`` of a line item, or ``POST /v1/prices``): currency,
    ``unit_amount``, a product name, and ``recurring[interval]`` when given."""

    def param(name: str) -> str:
        return f"{prefix}[{name}]" if prefix else name

    currency = price.get("currency")
    if not isinstance(currency, str) or len(currency) != 3 or not currency.islower():
        raise StripeError(400, "Invalid currency.", param("currency"))
    unit_amount = _positive_int(price.get("unit_amount"), param("unit_amount"))
    product = price.get("product_data")
    name = product.get("name") if isinstance(product, dict) else None
    if name is None and isinstance(price.get("product"), str):
        name = price["product"]
    if not isinstance(name, str) or not name:
        raise StripeError(400, "A product name is required.", param("product_data") + "[name]")
    recurring = price.get("recurring")
    interval = recurring.get("interval") if isinstance(recurring, dict) else None
    if recurring is not None and interval not in _INTERVALS:
        raise StripeError(
            400, "A recurring interval is required.", param("recurring") + "[interval]"
        )
    return _Item(name, unit_amount, currency, quantity, interval)


def _charge_rules(item: _Item, prefix: str) -> None:
    """Stripe's money rules for what a line item charges.

    - Three-decimal currencies: "these API calls require the least-significant (last) digit to
      be 0. Your integration must round amounts to the nearest ten. For example, 5.124 KWD must
      be rounded to 5120 or 5130." (docs.stripe.com/currencies, archived at
      https://web.archive.org/web/20220618095455/https://stripe.com/en-mt/docs/currencies);
    - "The amount value supports up to eight digits (e.g., a value of 99999999 for a USD charge
      of $999,999.99)" (stripe-python 16.1.0 params/_payment_intent_create_params.py:123).

    The error codes are Stripe's (``invalid_charge_amount``, ``amount_too_large``: the API's
    error codes in stripe-python 16.1.0 _payment_intent.py:218,297)."""
    code = item.currency.upper()
    if item.currency in THREE_DECIMAL and item.unit_amount % 10:
        raise StripeError(
            400,
            f"Invalid {code} amount {item.unit_amount}: {code} amounts must be a multiple of 10"
            f" (the last of three decimals is 0). Round to the nearest ten, for example"
            f" {item.unit_amount - item.unit_amount % 10} or"
            f" {item.unit_amount - item.unit_amount % 10 + 10}.",
            f"{prefix}[price_data][unit_amount]",
            code="invalid_charge_amount",
        )
    if item.unit_amount * item.quantity > MAX_AMOUNT:
        param = (
            f"{prefix}[price_data][unit_amount]"
            if item.unit_amount > MAX_AMOUNT
            else f"{prefix}[quantity]"
        )
        raise StripeError(
            400,
            f"Amount must be no more than {_major(MAX_AMOUNT, item.currency)} {code}.",
            param,
            code="amount_too_large",
        )


def _major(amount: int, currency: str) -> str:
    """A Stripe amount in major units, as Stripe's messages show it (999,999.99)."""
    if currency in ZERO_DECIMAL:
        return f"{amount:,}"
    places = 3 if currency in THREE_DECIMAL else 2
    whole, part = divmod(amount, 10**places)
    return f"{whole:,}.{part:0{places}d}"


def _positive_int(value: Any, param: str) -> int:
    if not isinstance(value, str) or not value.isdigit() or int(value) < 1:
        raise StripeError(400, f"Invalid positive integer: {value!r}.", param)
    return int(value)


def _metadata(value: Any, param: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise StripeError(400, "Metadata must be a hash of strings.", param)
    if len(value) > 50:
        raise StripeError(400, "Metadata can have at most 50 keys.", param)
    return dict(value)


def _replayed(account: _Account, params: Mapping[str, Any]) -> tuple[str | None, Any]:
    """The request's ``Idempotency-Key``, and the first answer given under it, saved as it
    was (Stripe "saves the resulting status code and body of the first request"), or None;
    the same key with other parameters is Stripe's ``idempotency_error``."""
    key = request.headers.get("Idempotency-Key")
    saved = account.idempotent.get(key) if key else None
    if saved is None:
        return key, None
    if saved.params != params:
        raise StripeError(
            400,
            "Keys for idempotent requests can only be used with the same parameters "
            f"they were first used with. Try using a key other than '{key}' if you "
            "meant to execute a different request.",
            kind="idempotency_error",
        )
    return key, (copy.deepcopy(saved.body), saved.status, {"Idempotent-Replayed": "true"})


def _query() -> dict[str, Any]:
    """The query's parameters, read as Stripe reads them (bracket notation: ``expand[]``,
    ``expand[0]``, ``created[gte]``)."""
    try:
        return stripe_form.decode(request.args.items(multi=True))
    except ValueError as exc:
        raise StripeError(400, str(exc)) from None


async def _form() -> dict[str, Any]:
    data = await request.get_data()
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    try:
        return stripe_form.decode(parse_qsl(text, keep_blank_values=True))
    except ValueError as exc:
        raise StripeError(400, str(exc)) from None


def _takes(endpoint: Mapping[str, Any], event_type: str) -> bool:
    enabled = endpoint["enabled_events"]
    return "*" in enabled or event_type in enabled


async def _post_signed(client: httpx.AsyncClient, url: str, secret: str, body: bytes) -> int:
    """POST one event, signed afresh on each attempt, retrying a failure quickly; the last
    status, 0 if never reached."""
    status = 0
    for attempt in range(1 + DELIVERY_RETRIES):
        if attempt:
            await trio.sleep(0.05 * attempt)
        headers = deliveries.signed(body, secret, objects.now_s())
        try:
            response = await client.post(url, content=body, headers=headers)
            status = response.status_code
        except httpx.HTTPError as exc:
            log.info("webhook to %s failed: %s", url, type(exc).__name__)
            status = 0
        if 200 <= status < 300:
            break
    return status


def _fill(url: str | None, session_id: str) -> str:
    """Stripe replaces ``{CHECKOUT_SESSION_ID}`` in the success and cancel URLs."""
    return (url or "/").replace("{CHECKOUT_SESSION_ID}", session_id)


def _html(text: str, status: int = 200) -> Response:
    return Response(text, status=status, content_type="text/html; charset=utf-8")


async def _render_error(error: StripeError) -> Any:
    return error.response()


async def _render_list_error(error: lists.ListError) -> Any:
    return StripeError(400, error.message, error.param).response()
