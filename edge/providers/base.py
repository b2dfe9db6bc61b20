"""The interface every payment provider implements.

An adapter is stateless: credentials, the transaction and an HTTP client are passed in, so the
project actor stays the only owner of state. Adapters raise ``ContractError`` for contract errors
(``502 provider_error`` when the provider's API fails).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import httpx

from edge.domain.convergence import Refund
from edge.domain.events import EventType
from edge.domain.labels import ICONS
from edge.domain.status import Status
from edge.errors import Conflict

if TYPE_CHECKING:
    from edge.providers.verifying import WebhookScheme


class SignatureInvalid(Exception):
    """The delivery's signature does not verify. ``reason`` is one of CONTRACT 4.3's:
    missing_header, malformed_header, timestamp_out_of_tolerance, no_matching_signature."""

    def __init__(self, reason: str, message: str = "") -> None:
        super().__init__(message or reason)
        self.reason = reason
        self.message = message or reason


class MalformedPayload(Exception):
    """The body verified but is not an event this adapter can read."""


REFUND = "refund"  # the follow-up that asks a provider to give money back
# the follow-up that reads a refund the provider made and its webhook did not state (BTCPay's
# InvoiceRefund names only its pull payment)
READ_REFUND = "read_refund"
# follow-ups still owed once the checkout has ended: money that came late goes back too
AFTER_THE_END = frozenset({REFUND, READ_REFUND})
# the follow-up that cancels at the provider a checkout the node stopped waiting for, where the
# provider never ends one by itself (Paddle's transactions stay open): answered with its events
CANCEL_CHECKOUT = "cancel"


@dataclass(frozen=True)
class FollowUp:
    """A durable action the node owes the provider after an event (PayPal's capture of an
    approved order). The actor writes it to the outbox in the same commit as the event; a worker
    runs it through ``Provider.follow_up`` until the provider answers for good."""

    action: str  # the adapter's own name for it, e.g. "capture"
    params: Mapping[str, Any] = field(default_factory=dict)


# Where a refund stands at its provider (``ProviderRefund.state``).
REFUND_PENDING = "pending"  # taken, the money has not moved yet (Paddle's review, a claim)
REFUND_SUCCEEDED = "succeeded"  # the money went back
REFUND_FAILED = "failed"  # refused, rejected, canceled or failed after it was taken
REFUND_STATES = (REFUND_PENDING, REFUND_SUCCEEDED, REFUND_FAILED)


@dataclass(frozen=True)
class ProviderRefund:
    """A refund as its provider holds it: the answer to a refund call, or one of the refunds
    the provider lists for a payment. ``tag`` is the node's refund id (``rf_...``) the provider
    keeps with it (Stripe ``metadata.refundId``, PayPal ``custom_id``, Paddle the ``reason``,
    BTCPay the pull payment's ``name``): a refund the node made carries it, one made in the
    provider's own dashboard does not. ``amount_minor`` is in the node's minor units."""

    id: str
    amount_minor: int | None
    state: str  # one of REFUND_STATES
    created_ms: int | None = None
    tag: str | None = None
    detail: str = ""
    # what was offered and taken back before it was paid (BTCPay's pull payment archived after
    # part of it was paid out): ``amount_minor`` is then what went back
    withdrawn_minor: int | None = None


class RefundAlreadyPending(Exception):
    """The provider refused a refund because one is already pending for the payment (Paddle's
    ``adjustment_pending_refund_request``): perhaps this very refund, made by an attempt whose
    answer was lost. The node asks the provider what exists and adopts it if it is its own."""


@dataclass(slots=True)  # not frozen: made per request (docs/architecture.md)
class NormalizedEvent:
    """One provider event in the node's terms (CONTRACT 6).

    Deduplication: ``dedup_ids`` are the ids under which this delivery counts as already seen
    (Stripe ``id``, Paddle ``event_id``, BTCPay ``originalDeliveryId``); the first is the one
    stored as ``providerEventId``. Left empty, it is ``(provider_event_id,)``.

    Matching (CONTRACT 4.3): the first of ``refs`` (provider object ids) that the node has
    linked to a transaction: the object it created at checkout, or one the provider linked to it
    since. ``link_refs`` are provider ids to remember for this transaction, so that later events
    that carry only them (a refund naming the payment intent) still match. ``tx_id`` is the
    transaction id the body echoes (metadata, client_reference_id ...): anyone who pays can
    set those fields on another payment, so it never matches on its own; it is kept as the
    event's claim, for the merchant's eyes.

    Money: ``amount_minor``/``currency`` are what the event says was paid (or refunded), in
    the node's minor units; ``unreadable_amount`` is the provider's own figure when it stated an
    amount the node cannot read exactly (a fraction the currency does not have, an unknown
    currency), which never matches a transaction's amount. ``charged_minor`` is what a payment
    took from the buyer when the provider added to the price (Paddle's tax on top), and
    ``refund`` what a refund gives back: the node sums refunds against what was charged.
    """

    provider_event_id: str
    type: EventType
    provider_type: str
    occurred_at_ms: int | None = None
    tx_id: str | None = None
    refs: tuple[str, ...] = ()
    link_refs: tuple[str, ...] = ()
    payment_status: Status | None = None  # where the transaction should move
    starts_subscription: bool = False  # the first successful payment of a subscription checkout
    subscription_ref: str | None = None  # the provider's subscription id
    subscription_status: Status | None = None  # where the sub_ record should move
    current_period_end_ms: int | None = None
    provider_customer: str | None = None  # needed later for portal sessions
    amount_minor: int | None = None
    currency: str | None = None
    unreadable_amount: str | None = None
    charged_minor: int | None = None  # what a payment took, when more than the price (tax)
    customer_ref: str | None = None
    metadata: Mapping[str, str] = field(default_factory=dict)
    dedup_ids: tuple[str, ...] = ()
    follow_ups: tuple[FollowUp, ...] = ()
    refund: Refund | None = None
    # what the merchant must look at that the event itself says (PayPal refusing to capture an
    # approved order for good, a refund that failed, a warning before a chargeback): the code
    # of the transaction's ``attention`` entry
    attention: str | None = None
    # the provider's refund this event is about, as the event shows it (id, amount, state,
    # the node's refund id it is tagged with): it ties the provider's refund to the node's
    # request even when the node never heard the answer to its call, and says when a refund
    # the node asked for failed or went through. ``refund`` is what it gives back, for the sum.
    provider_refund: ProviderRefund | None = None
    # the change of the transaction the event reports, where the provider can report one
    # change in several events (``edge.domain.changes``); None: the node derives it
    change: str | None = None

    def __post_init__(self) -> None:
        if not self.dedup_ids:
            self.dedup_ids = (self.provider_event_id,)

    @property
    def states_amount(self) -> bool:
        """Does the event say how much was paid (readable or not)?"""
        return self.amount_minor is not None or self.unreadable_amount is not None


@dataclass(frozen=True)
class PriceProblem:
    """A provider's rule that a price breaks: the product field at fault and the rule in words."""

    field: str  # "amount", "currency" or "name"
    rule: str


@dataclass(frozen=True)
class CredentialField:
    """One per-mode credential setting; ``secret`` ones are sealed at rest and write-only."""

    name: str
    secret: bool = False
    required: bool = True
    # "string", "url" (an address the node calls), "address" (a mailing address object),
    # "hosts" (a list of host names the node calls)
    shape: str = "string"
    # the kinds of value a string field takes (edge.domain.credential_shapes.KINDS), only
    # those when ``strict``: what the provider documents
    kinds: tuple[str, ...] = ()
    strict: bool = False
    # a regular expression the whole value must match, and the rule in words (the API
    # reference states it; a value that breaks it is 400 invalid_credential)
    pattern: str | None = None
    rule: str = ""


@dataclass(frozen=True)
class CredentialsCheck:
    """One mode's credentials as they would be saved, to try against the provider before they
    are (``Provider.check_credentials``)."""

    credentials: Mapping[str, Any]
    test: bool
    http: httpx.AsyncClient


class CredentialsRefused(Exception):
    """The provider refused a mode's credentials, or they lack what the node needs of it:
    ``field`` names the credential at fault, ``message`` says why for the merchant."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


@dataclass(frozen=True)
class CheckoutRequest:
    """``return_url`` is the node's own return address for this transaction (providers that
    return the buyer through the node, ``Provider.returns_through_node``), and
    ``cancel_return_url`` its address for a buyer who cancels there; ``remembered`` the
    provider object this adapter asked the node to keep for this product's price in this mode
    (``CheckoutResult.remember``: PayPal's billing plan), None the first time. ``again``: an
    earlier request for this transaction was cut short after it may have reached the provider
    (a key's retry taking it up): a provider that honours no idempotency key is asked what it
    made before anything is made anew."""

    tx: Mapping[str, Any]
    product: Mapping[str, Any]
    credentials: Mapping[str, Any]
    success_url: str
    cancel_url: str
    http: httpx.AsyncClient
    return_url: str = ""
    cancel_return_url: str = ""
    remembered: str | None = None
    again: bool = False


@dataclass(frozen=True)
class CheckoutResult:
    """What the client needs to continue (``fields``: url, token, reference ...), the provider's
    own id for the checkout (to match webhooks), and when it stops being usable."""

    fields: dict[str, Any]
    provider_ref: str | None = None
    expires_at_ms: int | None = None
    remember: str | None = None  # a provider object to reuse for this product's price


@dataclass(frozen=True)
class PortalRequest:
    subscription: Mapping[str, Any]
    credentials: Mapping[str, Any]
    return_url: str
    http: httpx.AsyncClient


@dataclass(frozen=True)
class PortalResult:
    url: str
    expires_at_ms: int | None = None


@dataclass(frozen=True)
class FollowUpRequest:
    """``attempts``: how many attempts at this follow-up began before this one (a refund's
    counts one a crash cut short: ``edge.store.outbox.claim_ops``), and
    ``created_ms`` when it was first owed (an idempotency key's life is counted from it)."""

    follow_up: FollowUp
    tx: Mapping[str, Any]
    credentials: Mapping[str, Any]
    http: httpx.AsyncClient
    attempts: int = 0
    created_ms: int = 0


@dataclass(frozen=True)
class SyncRequest:
    """Ask the provider what became of a transaction: its objects, read with the provider's
    own API (the checkout object the node created, its payment, refunds and disputes, and the
    subscription it started, ``subscription``: the node's record or None)."""

    tx: Mapping[str, Any]
    subscription: Mapping[str, Any] | None
    credentials: Mapping[str, Any]
    http: httpx.AsyncClient


@dataclass(frozen=True)
class SyncResult:
    """What the provider's objects say, as events the webhook pipeline takes (normalized,
    matched, checked, deduplicated: an event's ``dedup_ids`` name the object and the state it
    was seen in, so asking twice stores nothing twice). ``found`` is False when the provider
    does not know the object the node created at checkout; ``refunds`` are the payment's
    refunds as the provider lists them; ``body`` is what was read (only its hash is kept)."""

    found: bool
    events: tuple[NormalizedEvent, ...] = ()
    refunds: tuple[ProviderRefund, ...] = ()
    body: bytes = b""
    detail: str = ""


@dataclass(frozen=True)
class EventsRequest:
    """One page of the provider's list of events (or objects) since ``since_ms``: Stripe
    ``GET /v1/events``, Paddle ``GET /events``, PayPal's webhook events list, BTCPay invoices by
    date. ``cursor`` is the previous page's ``EventsPage.cursor`` (None for the first);
    ``until_ms``: now, by the clock ``since_ms`` was taken by, for a list that wants an end
    (PayPal's), so the next walk's start is never past this one's end."""

    credentials: Mapping[str, Any]
    mode: str
    since_ms: int
    http: httpx.AsyncClient
    cursor: str | None = None
    until_ms: int | None = None


@dataclass(frozen=True)
class EventsPage:
    """Events as the provider keeps them, each with the exact bytes it is read from (a body
    ``Provider.normalize`` takes, so a webhook of the same event is a duplicate by its id);
    where the provider lists objects rather than events (BTCPay's invoices by date),
    ``objects`` are the ids of checkout objects to ask about (``sync``) instead. ``cursor`` for
    the next page, None after the last."""

    bodies: tuple[bytes, ...] = ()
    objects: tuple[str, ...] = ()
    cursor: str | None = None


@dataclass(frozen=True)
class FollowUpResult:
    """``done``: the provider answered for good (success, or a refusal that retrying cannot
    change, told in ``detail``). A transient failure raises ``ProviderError`` instead: the
    worker retries it with backoff.

    ``events``: what the provider's answer says happened (a capture that completed or was
    declined), applied like webhook events before the entry is settled, so a crash in between
    repeats the (idempotent) call and the events deduplicate. ``body`` is the answer they were
    read from (only its hash is kept)."""

    done: bool = True
    detail: str = ""
    events: tuple[NormalizedEvent, ...] = ()
    body: bytes = b""
    refund: ProviderRefund | None = None  # the refund a refund follow-up made or adopted


@dataclass(slots=True)  # not frozen: made per request (docs/architecture.md)
class Delivery:
    """A webhook delivery to verify. ``headers`` have lower-case names; ``credentials`` maps
    each mode that has credentials to its opened (plain) credentials; ``http`` is for a
    provider that fetches what it verifies with (PayPal's signing certificate)."""

    headers: Mapping[str, str]
    body: bytes
    credentials: Mapping[str, Mapping[str, Any]]
    now_s: float
    http: httpx.AsyncClient


FollowUpAction = Callable[[FollowUpRequest], Awaitable[FollowUpResult]]


@dataclass(frozen=True)
class Provider:
    name: str
    kind: str  # card, wallet, form, crypto, manual
    checkout_type: str  # redirect, approval, token, reference
    default_label: str
    display_name: str = ""  # how buyers and merchants know it ("BTCPay Server"); else ``name``
    credential_fields: tuple[CredentialField, ...] = field(default=())
    publishable_field: str | None = None
    uses_reference_code: bool = False
    # How its webhooks are signed (``edge.providers.verifying``): the header, what is signed,
    # the key source and the timestamp window; None where it takes no webhooks.
    webhook: WebhookScheme | None = None
    # False where the provider says nothing when a checkout is left unpaid (PayPal): the node
    # expires the pending transaction itself at its ``expiresAt``.
    expires_checkouts: bool = True
    # True where the buyer comes back through ``/return/{provider}/{project}/{tx}`` (PayPal),
    # which asks ``returned`` what the node owes the provider, then sends the buyer on.
    returns_through_node: bool = False
    # True where the node can give money back: the provider's refund call (a ``refund``
    # follow-up: params refundId, amount in the node's minor units, reason), or pay by mail's
    # own record of money sent back by hand
    refunds: bool = False
    # False where the provider honours no idempotency key when a checkout is made (BTCPay
    # invoices, Paddle transactions): a checkout taken up again asks it what the first request
    # made (``CheckoutRequest.again``), which cannot see what is still being made, so it is
    # taken up only once the first request's call has had its time
    checkout_keyed: bool = True
    # False where a subscription product cannot be sold (BTCPay invoices and pay by mail are
    # one-off): not offered for one, and its checkout is refused before anything is stored.
    supports_subscriptions: bool = True
    # How a verified body is read (the adapter's events.normalize); None takes no webhooks.
    read_event: Callable[[bytes], NormalizedEvent] | None = None
    # The durable follow-ups it carries out, by action (capture, refund).
    follow_ups: Mapping[str, FollowUpAction] = field(default_factory=dict, hash=False)
    # Refunds (CONTRACT 4.3a), exactly once at the provider: ``send_refund`` asks for one
    # (a ``refund`` follow-up: params refundId, amount, reason, whole), tagged with the node's
    # refund id; ``refunds_of`` lists the refunds the provider holds for the transaction's
    # payment. ``refund_key_s``: how long the provider honours the idempotency key a refund
    # call carries (Stripe 24 h); None where it honours none (Paddle adjustments, BTCPay pull
    # payments), so every attempt asks ``refunds_of`` first (``edge.providers.refunding``).
    send_refund: Callable[[FollowUpRequest], Awaitable[ProviderRefund]] | None = None
    refunds_of: Callable[[FollowUpRequest], Awaitable[tuple[ProviderRefund, ...]]] | None = None
    refund_key_s: int | None = None
    # Asking the provider (CONTRACT 4.3a): ``sync`` reads one transaction's objects;
    # ``list_events`` pages through what the provider kept since a time (reconciling).
    sync: Callable[[SyncRequest], Awaitable[SyncResult]] | None = None
    list_events: Callable[[EventsRequest], Awaitable[EventsPage]] | None = None
    # True where ``list_events`` holds every change of every checkout (an event list: Stripe,
    # PayPal, Paddle), so walking it stands in for asking each open checkout in turn; False
    # where it lists objects by when they were made (BTCPay's invoices)
    walks_cover_checkouts: bool = False
    # The cheapest authenticated reads that prove a mode's credentials work and can do what
    # the node asks of them (``CredentialsRefused`` when not; ``ProviderError`` when the
    # provider could not be asked): run when the merchant saves them, so a set-up mistake is
    # told beside the field, before any buyer meets it (``edge.providers.checking``).
    check_credentials: Callable[[CredentialsCheck], Awaitable[None]] | None = None

    @property
    def signature_window_s(self) -> int | None:
        """Seconds a signed timestamp may be off, only where every attempt is signed afresh
        (Stripe ``t``, Paddle ``ts``); None where retries resend the first signature (PayPal,
        BTCPay)."""
        return self.webhook.window_s if self.webhook is not None else None

    def price_problem(self, amount_minor: int, currency: str, name: str) -> PriceProblem | None:
        """Why this provider cannot charge ``amount_minor`` of ``currency`` for a product
        called ``name`` (its own money and length rules, CONTRACT 4.3); None when it can.
        Checked when a product or an override is saved, and for a quantity at checkout."""
        return None

    @property
    def icon(self) -> str:
        """Its icon's file under /static/icons/: the kind of payment's (``labels.ICONS``)."""
        return ICONS[self.kind]

    def refund_reason_problem(self, reason: str) -> str | None:
        """Why this provider would refuse ``reason`` as a refund's reason (its own pattern and
        length: PayPal's ``note_to_payer``); None when it takes it. Checked when the merchant
        asks for the refund, so a refusal is a 400 that says why, never a failed refund."""
        return None

    def is_configured(self, credentials: Mapping[str, Any]) -> bool:
        return all(f.name in credentials for f in self.credential_fields if f.required)

    def publishable_key(self, credentials: Mapping[str, Any]) -> str | None:
        return credentials.get(self.publishable_field) if self.publishable_field else None

    def mailing_address(self, credentials: Mapping[str, Any]) -> dict[str, Any] | None:
        return None

    async def create_checkout(self, request: CheckoutRequest) -> CheckoutResult:
        raise NotImplementedError

    @property
    def verifies_offline(self) -> bool:
        """Its signature is checked with the project's own secrets alone (the shared HMAC
        steps), never a call out: the project's actor checks it in place, without a second
        message. A provider with a signer of its own, or a ``verify_webhook`` of its own, may
        call out, so it is checked off the actor."""
        shared_steps = type(self).verify_webhook is Provider.verify_webhook
        return shared_steps and (self.webhook is None or self.webhook.signer is None)

    async def verify_webhook(self, delivery: Delivery) -> str:
        """Return the mode ("test" or "live") whose key signed the delivery's body, by the
        adapter's declared ``webhook`` scheme (``edge.providers.verifying``); raise
        ``SignatureInvalid``. Runs off the project's actor unless ``verifies_offline`` (it may
        call the provider)."""
        if self.webhook is None:
            raise SignatureInvalid("no_matching_signature", f"{self.name} takes no webhooks")
        return await self.webhook.verify(delivery)

    def normalize(self, body: bytes, mode: str) -> NormalizedEvent:
        """Read a verified body with the adapter's ``read_event``; raise ``MalformedPayload``
        when it is not a readable event."""
        if self.read_event is None:
            raise MalformedPayload(f"{self.name} takes no webhooks")
        return self.read_event(body)

    def returned(self, tx: Mapping[str, Any], query: Mapping[str, str]) -> tuple[FollowUp, ...]:
        """What the node owes the provider when the buyer comes back through the node's return
        address (PayPal: capture the approved order)."""
        return ()

    async def follow_up(self, request: FollowUpRequest) -> FollowUpResult:
        """Carry out a durable follow-up (a capture ``normalize`` asked for, a refund) by the
        adapter's ``follow_ups``; one it has not is done, with nothing carried out."""
        action = request.follow_up.action
        carry_out = self.follow_ups.get(action)
        if carry_out is None:
            return FollowUpResult(
                detail=f"{self.display_name or self.name} has no follow-up {action!r}"
            )
        return await carry_out(request)

    async def portal_url(self, request: PortalRequest) -> PortalResult:
        raise Conflict("portal_unsupported", f"{self.name} has no hosted subscription portal.")
