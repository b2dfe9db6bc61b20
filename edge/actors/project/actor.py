"""The project actor: the single owner of one project's state.

It takes the project's messages one at a time, charges each request's rate bucket, and hands it
to the concern that answers it; the concerns share the project's state through one ``Ledger``.
Every change is handed to the store writer at once and the caller's reply is sent once it is
durable, so the actor moves on to its next message while the fsync happens (many actors' and
many messages' writes share a commit), yet no answer ever goes out before its data is durable.
Work that waits on the outside world (provider calls, webhook verification, long-poll timers)
runs off the actor, and comes back to it as a message.

Handlers are coroutines because the store's reads are awaited (``edge.store.engine``). On an
engine whose reads never give way (LMDB) a handler runs to its end without a checkpoint, so
``handle_now`` runs it in the caller's task, at once (the fast path: no mailbox, no task); on
one whose reads do (PostgreSQL) every message goes through the mailbox, one at a time.
"""

from __future__ import annotations

import logging
from collections.abc import Coroutine
from typing import Any

from edge.actors import messages as m
from edge.actors.context import NodeContext
from edge.actors.project.asking import Asking
from edge.actors.project.attention import Attention
from edge.actors.project.checkout import Checkouts
from edge.actors.project.endpoints import Endpoints
from edge.actors.project.health import ProviderHealth
from edge.actors.project.idempotency import IdempotencyKeys
from edge.actors.project.intake import WebhookIntake
from edge.actors.project.ledger import Ledger, Reply
from edge.actors.project.merchant import MerchantActions
from edge.actors.project.polls import Polls
from edge.actors.project.public_info import PublicInfoPages
from edge.actors.project.quota import Quota
from edge.actors.project.refunds import Refunds
from edge.actors.project.retention import PRUNE_BATCH, PRUNE_EVERY_MS, expired_event_ops
from edge.actors.project.settings import ProjectSettings
from edge.actors.rates import ProjectRates
from edge.actors.registry import ActorRef
from edge.domain import ids
from edge.domain.errors import InvalidInput
from edge.errors import ContractError, invalid, project_not_found
from edge.store import keys

log = logging.getLogger("edge.actors")


# message type -> (the concern that answers it, its method); looked up per message rather than
# bound per actor: an idle project's actor should cost little (10,000 of them in memory)
_HANDLERS: dict[type, tuple[str, str]] = {
    m.GetStatus: ("_polls", "get_status"),
    m.GetPublicInfo: ("_public_info", "get"),
    m.Webhook: ("_intake", "receive"),
    m.WebhookVerified: ("_intake", "verified"),
    m.WebhookRefused: ("_intake", "refused"),
    m.StartCheckout: ("_checkouts", "start"),
    m.CheckoutFinished: ("_checkouts", "finish"),
    m.ProbeFinished: ("_health", "probed"),
    m.ExpireCheckout: ("_checkouts", "expire"),
    m.BuyerReturned: ("_checkouts", "returned"),
    m.FollowUpReported: ("_intake", "reported"),
    m.MarkPaid: ("_merchant", "mark_paid"),
    m.CancelTx: ("_merchant", "cancel"),
    m.RefundTx: ("_refunds", "request"),
    m.RefundOutcome: ("_refunds", "outcome"),
    m.ResolveTx: ("_attention", "resolve"),
    m.SyncTarget: ("_asking", "target"),
    m.SyncReported: ("_asking", "reported"),
    m.ProviderTarget: ("_asking", "provider_target"),
    m.Reconciled: ("_asking", "reconciled"),
    m.TxOfRef: ("_asking", "tx_of_ref"),
    m.WalkNext: ("_asking", "walk_next"),
    m.WalkUntil: ("_asking", "walk_until"),
    m.LooksEnded: ("_asking", "looks_ended"),
    m.PortalUrl: ("_merchant", "portal_url"),
    m.TriggerMaterial: ("_merchant", "trigger_material"),
    m.FollowUpTarget: ("_merchant", "follow_up_target"),
    m.GetUsage: ("_quota", "get_usage"),
    m.GetProject: ("_settings", "get_project"),
    m.PatchProject: ("_settings", "patch_project"),
    m.PutProduct: ("_settings", "put_product"),
    m.DeleteProduct: ("_settings", "delete_product"),
    m.PutProvider: ("_settings", "put_provider"),
    m.TryProvider: ("_settings", "try_provider"),
    m.CreateKey: ("_settings", "create_key"),
    m.RevokeKey: ("_settings", "revoke_key"),
    m.CreateEndpoint: ("_endpoints", "create"),
    m.ListEndpoints: ("_endpoints", "list"),
    m.PatchEndpoint: ("_endpoints", "patch"),
    m.DeleteEndpoint: ("_endpoints", "delete"),
    m.ReplayEvents: ("_endpoints", "replay"),
    m.EndpointOutcome: ("_endpoints", "outcome"),
}


class ProjectActor:
    __slots__ = (
        "id",
        "epoch",
        "ledger",
        "_rates",
        "_pruned_at",
        "_quota",
        "_health",
        "_polls",
        "_intake",
        "_checkouts",
        "_merchant",
        "_refunds",
        "_attention",
        "_asking",
        "_settings",
        "_endpoints",
        "_public_info",
    )

    def __init__(
        self, ctx: NodeContext, project: dict[str, Any], ref: ActorRef, epoch: int | None = None
    ) -> None:
        self.id: str = project["id"]
        self.epoch = epoch  # the lease this actor serves under (cluster mode), else None
        self.ledger = ledger = Ledger(ctx, project, epoch)
        ledger.on_settled(ref.settled)
        self._rates = ProjectRates(ctx.settings, project["tier"])
        self._pruned_at = 0
        self._quota = quota = Quota(ledger)
        self._polls = Polls(ledger, ref)
        self._refunds = refunds = Refunds(ledger)
        self._intake = WebhookIntake(ledger, quota, refunds)
        self._health = health = ProviderHealth(ledger, ref)
        self._checkouts = Checkouts(
            ledger, IdempotencyKeys(ledger), quota, self._intake, ref, health
        )
        self._merchant = MerchantActions(ledger)
        self._attention = Attention(ledger)
        self._asking = Asking(ledger, self._intake, refunds)
        self._settings = ProjectSettings(ledger)
        self._endpoints = Endpoints(ledger)
        self._public_info = PublicInfoPages(ledger, health)

    @classmethod
    async def load(
        cls, ctx: NodeContext, project_id: str, ref: ActorRef, epoch: int | None = None
    ) -> ProjectActor:
        """The project's actor, from its stored record; ``project_not_found`` when none.
        ``epoch``: the lease it serves under (cluster mode)."""
        valid = ids.is_project_id(project_id)
        record = await ctx.store.get(keys.project(project_id)) if valid else None
        if record is None:
            raise project_not_found()
        return cls(ctx, record, ref, epoch)

    # -- the Actor protocol -------------------------------------------------------------

    def handle_now(self, message: Any, reply: Reply) -> bool:
        """Every message is handled without waiting, unless the ledger must reload first or
        the store's reads may give way."""
        if self.ledger.stale or self.ledger.ctx.store.reads_give_way:
            return False
        run_through(self._dispatch(message, reply))
        return True

    async def handle(self, message: Any, reply: Reply) -> None:
        if self.ledger.stale:
            await self.ledger.quiesce()
            await self.ledger.reload()
        await self._dispatch(message, reply)

    async def quiesce(self) -> None:
        await self.ledger.quiesce()

    def idle(self) -> bool:
        return (
            self._checkouts.in_flight == 0 and not self._polls.waiting and not self.ledger.writing()
        )

    def release_waiters(self) -> None:
        self._polls.release()

    # -- dispatch -----------------------------------------------------------------------

    async def _dispatch(self, message: Any, reply: Reply) -> None:
        route = _HANDLERS.get(type(message))
        if route is None:
            raise TypeError(f"project actor got an unknown message {message!r}")
        handler = getattr(getattr(self, route[0]), route[1])
        admitted = await self._admit(message, reply)
        if admitted is None:
            return
        try:
            await handler(message, admitted)
        except InvalidInput as exc:
            admitted(invalid(exc.message, exc.field, exc.code))
        except ContractError as failure:
            admitted(failure)

    async def _admit(self, message: Any, reply: Reply) -> Reply | None:
        """Charge the request's rate bucket: the reply to use (carrying its RateLimit-*, errors
        included), or None when refused (the 429 is already sent)."""
        await self._prune_now_and_then()
        charge = getattr(message, "charge", None)
        if charge is None:
            return reply
        try:
            headers = self._rates_now().take(charge.bucket, charge.client)
        except ContractError as failure:
            reply(failure)
            return None
        return _with_headers(reply, headers)

    def _rates_now(self) -> ProjectRates:
        """The rate buckets of the project's tier (the tier may have changed, or reloaded)."""
        tier = self.ledger.project["tier"]
        if self._rates.tier != tier:
            self._rates = ProjectRates(self.ledger.ctx.settings, tier)
        return self._rates

    async def _prune_now_and_then(self) -> None:
        ledger = self.ledger
        now = ledger.now_ms()
        if now - self._pruned_at < PRUNE_EVERY_MS:
            return
        self._pruned_at = now
        ops = await expired_event_ops(ledger.ctx.store, self.id, now)
        if not ops:
            return
        log.info("project %s: pruning %d expired event records", self.id, len(ops))
        ticket = ledger.submit(ops)
        if len(ops) >= PRUNE_BATCH:
            # more have expired than one batch: go on once this one is gone from the store
            ticket.when_durable(lambda _error: setattr(self, "_pruned_at", 0))


def run_through(handling: Coroutine[Any, Any, None]) -> None:
    """Run a handler's coroutine to its end now, in this task. Only for an engine whose reads
    never give way: a handler that did would be one message interleaved with others, a bug."""
    try:
        handling.send(None)
    except StopIteration:
        return
    handling.close()
    raise RuntimeError("a handler gave way on an engine whose reads never do")


def _with_headers(reply: Reply, headers: dict[str, str]) -> Reply:
    """Send ``headers`` (RateLimit-*) with whatever the reply turns out to be."""

    def send(value: Any) -> None:
        if isinstance(value, ContractError):
            reply(value.with_headers(headers))
        elif isinstance(value, m.Answer):
            reply(m.Answer(value.value, {**headers, **value.headers}))
        else:
            reply(m.Answer(value, headers))

    return send
