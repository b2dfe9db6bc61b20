"""The project actor: the single owner of one project's state.

It takes the project's messages one at a time, charges each request's rate bucket, and hands it
to the concern that answers it; the concerns share the project's state through one ``Ledger``.
Every change is handed to the store writer at once and the caller's reply is sent once it is
durable, so the actor moves on to its next message while the fsync happens (many actors' and
many messages' writes share a commit), yet no answer ever goes out before its data is durable.
Work that waits on the outside world (provider calls, webhook verification, long-poll timers)
runs off the actor, and comes back to it as a message.

The handler rule. Every handler (``HANDLERS``: message class -> the concern's method) is a
coroutine function, and what it awaits is the store's reads, nothing else: work that waits on
the outside world runs off the actor and comes back as a message. So on an engine whose reads
never give way (LMDB, one node) a handler runs to its end without suspending, and
``handle_now`` drives it by hand in the caller's task (``run_through``: the fast path, no
mailbox, no task); a handler that suspended there would let two messages interleave, so
``run_through`` raises instead. On an engine whose reads do give way (PostgreSQL, N nodes)
every message goes through the mailbox and is awaited, one at a time. Both engines run the same
handlers; tests/actors/project/test_handler_rule.py holds the rule.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from edge.actors import messages as m
from edge.actors.context import NodeContext
from edge.actors.project.applying import EventApplier
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
from edge.domain.errors import InvalidInput
from edge.errors import ContractError, check_project_id, invalid, project_not_found
from edge.store import keys

log = logging.getLogger("edge.actors")

M = TypeVar("M")
# A handler: a coroutine function of its message and the reply (the handler rule, above)
Handler = Callable[[M, Reply], Coroutine[Any, Any, None]]
# Where an actor keeps the handler of one message class
Route = Callable[["ProjectActor"], Handler[M]]


def _on(kind: type[M], route: Route[M]) -> tuple[type, Route[Any]]:
    return kind, route


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
        self, ctx: NodeContext, project: dict[str, Any], ref: ActorRef, epoch: int
    ) -> None:
        self.id: str = project["id"]
        self.epoch = epoch  # what this node's ownership of the project was when it was made
        self.ledger = ledger = Ledger(ctx, project, epoch)
        ledger.on_settled(ref.settled)
        self._rates = ProjectRates(ctx.settings, project["tier"])
        self._pruned_at = 0
        self._quota = quota = Quota(ledger)
        self._polls = Polls(ledger, ref)
        idempotency = IdempotencyKeys(ledger)  # one namespace: checkouts and refunds
        self._refunds = refunds = Refunds(ledger, idempotency)
        applier = EventApplier(ledger, quota, refunds)
        self._intake = WebhookIntake(applier)
        self._health = health = ProviderHealth(ledger, ref)
        self._checkouts = Checkouts(ledger, idempotency, quota, applier, ref, health)
        self._merchant = MerchantActions(ledger)
        self._attention = Attention(ledger)
        self._asking = Asking(ledger, applier, refunds)
        self._settings = ProjectSettings(ledger)
        self._endpoints = Endpoints(ledger)
        self._public_info = PublicInfoPages(ledger, health)

    @classmethod
    async def load(cls, ctx: NodeContext, project_id: str, ref: ActorRef) -> ProjectActor:
        """The project's actor, from its stored record, under this node's ownership of it
        (cluster mode: the lease, asked of its holder, since a request brought the project
        here); ``project_not_found`` when there is no such project, which is given back."""
        check_project_id(project_id)  # no lease for an id no project can have
        ownership = ctx.ownership
        epoch = await ownership.take(project_id, ask=True)
        try:
            record = await ctx.store.get(keys.project(project_id))
            if record is None:
                raise project_not_found()
        except ContractError:
            await ownership.give_back(project_id)
            raise
        return cls(ctx, record, ref, epoch)

    # -- the Actor protocol -------------------------------------------------------------

    def handle_now(self, message: Any, reply: Reply) -> bool:
        """Every message is handled without waiting, unless the ledger must reload first or
        the store's reads may give way."""
        if self.ledger.stale or self.ledger.ctx.store.features.reads_give_way:
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
        return not self._checkouts.calling and not self._polls.waiting and not self.ledger.writing()

    def release_waiters(self) -> None:
        self._polls.release()

    # -- dispatch -----------------------------------------------------------------------

    async def _dispatch(self, message: Any, reply: Reply) -> None:
        route = HANDLERS.get(type(message))
        if route is None:
            raise TypeError(f"project actor got an unknown message {message!r}")
        handler = route(self)
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
        events = keys.prefix(self.id, keys.EVENT)
        ledger.forget_events(
            key[len(events) :].decode() for _, key, _ in ops if key.startswith(events)
        )
        ticket = ledger.submit(ops)
        if len(ops) >= PRUNE_BATCH:
            # more have expired than one batch: go on once this one is gone from the store
            ticket.when_durable(lambda _error: setattr(self, "_pruned_at", 0))


# Each message class and the handler that answers it, as the actor's concern's bound method
# (``_on`` lets mypy check that the handler takes that class). Looked up per message rather than
# bound per actor: an idle project's actor should cost little (10,000 of them in memory).
HANDLERS: dict[type, Route[Any]] = dict(
    [
        _on(m.GetStatus, lambda a: a._polls.get_status),
        _on(m.GetPublicInfo, lambda a: a._public_info.get),
        _on(m.Webhook, lambda a: a._intake.receive),
        _on(m.WebhookVerified, lambda a: a._intake.verified),
        _on(m.WebhookRefused, lambda a: a._intake.refused),
        _on(m.StartCheckout, lambda a: a._checkouts.start),
        _on(m.CheckoutFinished, lambda a: a._checkouts.finish),
        _on(m.ProbeFinished, lambda a: a._health.probed),
        _on(m.ExpireCheckout, lambda a: a._checkouts.expire),
        _on(m.BuyerReturned, lambda a: a._checkouts.returned),
        _on(m.FollowUpReported, lambda a: a._intake.reported),
        _on(m.MarkPaid, lambda a: a._merchant.mark_paid),
        _on(m.CancelTx, lambda a: a._merchant.cancel),
        _on(m.RefundTx, lambda a: a._refunds.request),
        _on(m.RefundOutcome, lambda a: a._refunds.outcome),
        _on(m.ResolveTx, lambda a: a._attention.resolve),
        _on(m.SyncTarget, lambda a: a._asking.target),
        _on(m.SyncReported, lambda a: a._asking.reported),
        _on(m.ProviderTarget, lambda a: a._asking.provider_target),
        _on(m.Reconciled, lambda a: a._asking.reconciled),
        _on(m.TxOfRef, lambda a: a._asking.tx_of_ref),
        _on(m.WalkNext, lambda a: a._asking.walk_next),
        _on(m.WalkUntil, lambda a: a._asking.walk_until),
        _on(m.LooksEnded, lambda a: a._asking.looks_ended),
        _on(m.PortalUrl, lambda a: a._merchant.portal_url),
        _on(m.TriggerMaterial, lambda a: a._merchant.trigger_material),
        _on(m.FollowUpTarget, lambda a: a._merchant.follow_up_target),
        _on(m.GetUsage, lambda a: a._quota.get_usage),
        _on(m.GetProject, lambda a: a._settings.get_project),
        _on(m.PatchProject, lambda a: a._settings.patch_project),
        _on(m.PutProduct, lambda a: a._settings.put_product),
        _on(m.DeleteProduct, lambda a: a._settings.delete_product),
        _on(m.PutProvider, lambda a: a._settings.put_provider),
        _on(m.TryProvider, lambda a: a._settings.try_provider),
        _on(m.CreateKey, lambda a: a._settings.create_key),
        _on(m.RevokeKey, lambda a: a._settings.revoke_key),
        _on(m.CreateEndpoint, lambda a: a._endpoints.create),
        _on(m.ListEndpoints, lambda a: a._endpoints.list),
        _on(m.PatchEndpoint, lambda a: a._endpoints.patch),
        _on(m.DeleteEndpoint, lambda a: a._endpoints.delete),
        _on(m.ReplayEvents, lambda a: a._endpoints.replay),
        _on(m.EndpointOutcome, lambda a: a._endpoints.outcome),
    ]
)


def run_through(handling: Coroutine[Any, Any, None]) -> None:
    """Run a handler's coroutine to its end now, in this task. Only for an engine whose reads
    never give way: a handler that suspended would be one message interleaved with others, a
    broken handler rule (module docstring), so it is closed and raises."""
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
