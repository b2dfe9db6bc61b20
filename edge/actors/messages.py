"""Messages to a project actor. Frozen: once sent, nobody changes them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from edge.domain.returns import Outcome


@dataclass(slots=True)  # not frozen: made per request (docs/architecture.md)
class Charge:
    """Which rate bucket a request is counted in (a key of Settings.rate_limits), and whom."""

    bucket: str
    client: str


@dataclass(slots=True)  # not frozen: made per request (docs/architecture.md)
class Answer:
    """A reply with headers to send along (the RateLimit-* of a counted request)."""

    value: Any
    headers: dict[str, str]


@dataclass(frozen=True)
class GetStatus:
    item_id: str
    wait_s: float = 0.0  # long poll: answer when the version passes ``version`` or after this
    version: int | None = None
    charge: Charge | None = None


@dataclass(frozen=True)
class GetPublicInfo:
    product_id: str | None
    mode: str
    charge: Charge | None = None


@dataclass(frozen=True)
class GetUsage:
    pass


@dataclass(frozen=True)
class StartCheckout:
    provider: str
    product_id: str
    metadata: dict[str, str]
    quantity: int
    mode: str
    tx_id: str | None = None
    success_url: str | None = None
    cancel_url: str | None = None
    idempotency_key: str | None = None
    body_hash: str = ""
    charge: Charge | None = None


@dataclass(frozen=True)
class ProbeFinished:
    """A failing provider's probe returned (``edge.actors.project.health``): ``answered``."""

    provider: str
    mode: str
    answered: bool


@dataclass(frozen=True)
class CheckoutFinished:
    """Sent by the actor's own background task when the provider call returns."""

    tx_id: str
    result: Any  # CheckoutResult or Failure
    reply: Callable[[Any], None]


@dataclass(frozen=True)
class MarkPaid:
    tx_id: str
    mode: str | None  # the key's mode; None for the operator's token
    note: str | None = None


@dataclass(frozen=True)
class ResolveTx:
    """Mark what a transaction needed the merchant for handled: ``by`` says who (a key id, an
    account, the operator), ``note`` what they did."""

    tx_id: str
    mode: str | None  # the key's mode; None for the operator and an account
    by: str
    note: str | None = None


@dataclass(frozen=True)
class RefundTx:
    """Give money back for a paid transaction: ``amount`` in major units (all that is left when
    None), through its provider's refund call (a durable follow-up) or, for pay by mail, as the
    merchant's own record of a refund sent."""

    tx_id: str
    mode: str | None  # the key's mode; None for the operator's token
    amount: Any = None  # a Decimal in the transaction's currency
    reason: str | None = None
    idempotency_key: str | None = None  # the same key and request: the first refund's answer
    body_hash: str = ""


@dataclass(frozen=True)
class CancelTx:
    tx_id: str
    mode: str | None


@dataclass(frozen=True)
class GetProject:
    pass


@dataclass(frozen=True)
class PatchProject:
    changes: dict[str, Any]


@dataclass(frozen=True)
class PutProduct:
    product: dict[str, Any]


@dataclass(frozen=True)
class DeleteProduct:
    product_id: str


@dataclass(frozen=True)
class PutProvider:
    """``checks``: what trying the credentials found, by mode (``edge.providers.checking``
    ``Checked.view`` with ``at``), kept beside them."""

    provider: str
    body: dict[str, Any]
    checks: dict[str, dict[str, Any]] = field(default_factory=dict)


@dataclass(frozen=True)
class TryProvider:
    """The credentials a ``PutProvider`` with ``body`` would save, opened, by mode: the modes
    to try before saving (those given, and every configured one when the body turns the
    provider on). Nothing is stored; a body the save would refuse is refused here."""

    provider: str
    body: dict[str, Any]


@dataclass(frozen=True)
class CreateKey:
    mode: str
    name: str


@dataclass(frozen=True)
class RevokeKey:
    key_id: str


@dataclass(slots=True)  # not frozen: made per request (docs/architecture.md)
class Webhook:
    """A provider's delivery (``edge.actors.deliveries``): the actor charges the webhook bucket,
    then checks, applies and answers it where the provider's signature is an HMAC, else answers
    ``WebhookKeys`` for the caller to verify the signature with."""

    provider: str
    headers: dict[str, str]
    body: bytes = field(repr=False)
    charge: Charge | None = None


@dataclass(slots=True)  # not frozen: made per request (docs/architecture.md)
class WebhookKeys:
    """What a delivery's signature is checked with: the project's enabled provider and its
    opened credentials, by mode (only the modes configured)."""

    provider: Any  # edge.providers.base.Provider
    credentials: dict[str, Any] = field(repr=False)


@dataclass(slots=True)  # not frozen: made per request (docs/architecture.md)
class WebhookVerified:
    """A delivery whose signature verified in ``mode``: the actor normalizes, deduplicates and
    applies it, and answers once it is durable."""

    provider: str
    mode: str
    body: bytes = field(repr=False)


@dataclass(slots=True)  # not frozen: made per request (docs/architecture.md)
class WebhookRefused:
    """A delivery whose signature did not verify: the refusal is kept, and the answer is
    ``401 signature_invalid`` once that is durable."""

    provider: str
    reason: str  # a SignatureInvalid reason
    message: str
    body: bytes = field(repr=False)


@dataclass(frozen=True)
class FollowUpTarget:
    """What a durable follow-up acts on: the transaction and its provider's credentials for
    ``mode`` (None once the checkout has ended: nothing more is done for it)."""

    tx_id: str
    mode: str
    action: str = ""


# What became of a refund the node asked for (``RefundOutcome.outcome``).
REFUND_MADE = "made"  # the provider's refund, made or adopted: ``refund``
REFUND_REFUSED = "refused"  # the provider refused it for good
REFUND_UNKNOWN = "unknown"  # the retries ended with no answer


@dataclass(frozen=True)
class RefundOutcome:
    """What became of a refund the node asked for (``edge.actors.followups``: made or adopted,
    with the provider's ``refund``; refused for good; unknown once the retries ended)."""

    tx_id: str
    refund_id: str
    outcome: str
    refund: Any  # ProviderRefund | None
    detail: str = ""


@dataclass(frozen=True)
class SyncTarget:
    """What asking the provider about a transaction needs (``edge.actors.sync``)."""

    tx_id: str
    mode: str | None  # the key's mode; None for the operator and an account


@dataclass(frozen=True)
class SyncReported:
    """What the provider's objects say of a transaction (a ``SyncResult``), to apply like
    webhook deliveries; ``why`` the node asked (on demand, owed, reconcile)."""

    tx_id: str
    provider: str
    mode: str
    result: Any  # SyncResult
    why: str


@dataclass(frozen=True)
class ProviderTarget:
    """A provider's opened credentials for ``mode``, to walk its lists (reconcile)."""

    provider: str
    mode: str


@dataclass(frozen=True)
class Reconciled:
    """Events a provider's list holds (exact bodies, fetched by the node with the project's
    credentials), to apply as the webhooks the node missed."""

    provider: str
    mode: str
    bodies: tuple[bytes, ...] = field(repr=False)


@dataclass(frozen=True)
class LooksEnded:
    """The node asked about a checkout for as long as it asks, and it is still open: end it
    (the provider's cancel, where it has one) or flag it."""

    tx_id: str


@dataclass(frozen=True)
class WalkUntil:
    """Walk the provider account's lists every ``EDGE_SYNC_EVERY_S`` until at least ``until``
    (an open checkout the walk looks after), a walk begun now reading from ``since`` on (the
    checkout's creation: its first look may come late, after the node was down)."""

    provider: str
    mode: str
    until: int
    since: int


@dataclass(frozen=True)
class WalkNext:
    """A walk of a provider account's lists (``outbox.RECONCILE``) ended at ``walked_to``:
    the project says when the next is due (None: webhooks reach the node again)."""

    provider: str
    mode: str
    walked_to: int


@dataclass(frozen=True)
class TxOfRef:
    """The transaction a provider object the node created belongs to (None: none)."""

    provider: str
    mode: str
    ref: str


@dataclass(frozen=True)
class FollowUpReported:
    """What a provider answered to a follow-up (a capture that completed or was declined), to be
    applied like verified webhook deliveries; the reply comes once it is durable."""

    provider: str
    mode: str
    events: tuple[Any, ...]  # NormalizedEvent
    body: bytes = field(repr=False)


@dataclass(frozen=True)
class ExpireCheckout:
    """The time of a pending checkout whose provider never expires it has come; or,
    ``unanswered``, the time by which its provider's answer was due to be recorded."""

    tx_id: str
    unanswered: bool = False


@dataclass(frozen=True)
class BuyerReturned:
    """The buyer came back through the node's return address (CONTRACT 4.3), or its cancel
    address (``canceled``): owe the provider what it says, and answer a ``Returned``.
    ``view_only``: only the outcome is asked for (the page shown again)."""

    provider: str
    tx_id: str
    query: dict[str, str]
    canceled: bool = False
    view_only: bool = False
    charge: Charge | None = None


@dataclass(frozen=True)
class Returned:
    """What the buyer is told and where they go on to: the success address when the outcome
    succeeded, else the cancel address. ``waiting``: the provider has not answered what the
    return owed (PayPal's capture) yet; asking again once it has gives the final outcome."""

    outcome: Outcome
    provider_name: str
    success_url: str
    cancel_url: str
    waiting: bool


@dataclass(frozen=True)
class PortalUrl:
    subscription_id: str
    mode: str | None
    return_url: str | None


@dataclass(frozen=True)
class TriggerMaterial:
    """What ``edge trigger`` needs to sign a simulated event: a test transaction and the
    provider's test-mode credentials. Only ever answered to the operator's token."""

    provider: str
    tx_id: str


@dataclass(frozen=True)
class CreateEndpoint:
    url: str
    mode: str
    types: tuple[str, ...]
    description: str


@dataclass(frozen=True)
class ListEndpoints:
    pass


@dataclass(frozen=True)
class PatchEndpoint:
    endpoint_id: str
    changes: dict[str, Any]  # url, types, enabled, description, rotateSecret


@dataclass(frozen=True)
class DeleteEndpoint:
    endpoint_id: str


@dataclass(frozen=True)
class ReplayEvents:
    """Owe an endpoint the events since ``since`` (exclusive), or the ``event_ids``, again."""

    endpoint_id: str
    since: str | None
    event_ids: tuple[str, ...]


@dataclass(frozen=True)
class EndpointOutcome:
    """How an attempt went, for the endpoint's health: failing since when, disabled why."""

    endpoint_id: str
    ok: bool
    status: int | None
