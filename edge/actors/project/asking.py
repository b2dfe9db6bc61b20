"""What the node learns by asking a provider about one transaction (CONTRACT 4.3a, sync).

The call itself runs off the actor (``edge.actors.sync``): the actor hands out what it needs
(``target``: the transaction, its subscription, the provider's opened credentials) and takes the
answer back as a message (``reported``). What the provider's objects say comes as events and goes
through the webhook pipeline (``WebhookIntake.take_all``): normalized, matched by the node's own
objects, amounts checked, deduplicated, convergent, in one commit, each change told once. Each
event is marked ``source: sync``; a later webhook for the same change is its repeat
(``duplicateOf``).

The transaction keeps what asking found (``tx["asked"]``): when, why, whether the provider knew
the checkout, and how many changes it learned that no webhook had brought. That is what tells a
merchant their provider's webhooks are not reaching the node; a webhook that comes after, for a
change already learned, clears it (``webhook_followed``). A checkout its provider does not know
is flagged, never left pending in silence.
"""

from __future__ import annotations

from edge.actors import messages as m
from edge.actors.project.applying import EventApplier
from edge.actors.project.attention import flag
from edge.actors.project.ledger import Ledger, Reply
from edge.actors.project.refunds import Refunds
from edge.actors.records import transaction_view
from edge.domain import attention
from edge.domain.asking import walk_until_ms
from edge.domain.events import SOURCE_SYNC
from edge.domain.status import Status
from edge.errors import Conflict
from edge.providers.base import CANCEL_CHECKOUT, FollowUp, MalformedPayload, SyncResult
from edge.providers.registry import PROVIDERS
from edge.store import keys, outbox
from edge.store.engine import Op

_OPEN = (Status.PENDING, Status.PROCESSING)
_WALK = "walk"  # PROVIDER_OBJECT namespace: provider|mode -> until when its lists are walked


class Asking:
    def __init__(self, ledger: Ledger, applier: EventApplier, refunds: Refunds) -> None:
        self.ledger = ledger
        self.applier = applier
        self.refunds = refunds

    async def target(self, msg: m.SyncTarget, reply: Reply) -> None:
        """What asking the provider about the transaction needs; ``sync_unsupported`` for a
        provider the node cannot ask (pay by mail)."""
        ledger = self.ledger
        tx = await ledger.visible_tx(msg.tx_id, msg.mode)
        provider = PROVIDERS[tx["provider"]]
        if provider.sync is None:
            raise Conflict(
                "sync_unsupported",
                f"{provider.display_name or provider.name} has no provider to ask: the node's"
                " own record is all there is.",
            )
        mode = "test" if tx["isTest"] else "live"
        _, credentials = ledger.configured(provider.name, mode)
        sub = await ledger.subscription(tx["subscriptionId"]) if tx.get("subscriptionId") else None
        ledger.reply_read(
            reply,
            {
                "tx": dict(tx),
                "subscription": dict(sub) if sub else None,
                "credentials": dict(credentials),
                "provider": provider.name,
                "mode": mode,
                "secrets": [f.name for f in provider.credential_fields if f.secret],
            },
            tx["id"],
        )

    async def reported(self, msg: m.SyncReported, reply: Reply) -> None:
        """Apply what the provider's objects say, in one commit; answer the transaction as it
        now is, with what was learned."""
        ledger = self.ledger
        result: SyncResult = msg.result
        provider = ledger.provider(msg.provider)
        ops: list[Op] = []
        told = await self.applier.take_all(
            provider, msg.mode, result.events, result.body, SOURCE_SYNC, ops
        )
        tx = await ledger.tx(msg.tx_id)
        if tx is None:
            ledger.commit(ops, reply, {"learned": len(told), "found": result.found})
            return
        for seen in result.refunds:
            self.refunds.observed(tx, seen)
        if not result.found and tx["status"] in _OPEN:
            flag(tx, [{"code": attention.NOT_AT_PROVIDER, "detail": result.detail or None}])
        now = ledger.now_ms()
        if told:
            # the provider's webhooks do not reach the node: walk its lists too, so refunds and
            # disputes of payments already paid are learned as well
            ops += await self._walking(provider.name, msg.mode, now, walk_until_ms(now))
        # (what it learned is counted as it is taken: ``event_records.asked_learned``)
        tx["asked"] = {**(tx.get("asked") or {}), "at": now, "why": msg.why, "found": result.found}
        ops += ledger.tx_ops(tx)
        ledger.commit(
            ops,
            reply,
            {"transaction": transaction_view(tx), "learned": len(told), "found": result.found},
        )

    async def provider_target(self, msg: m.ProviderTarget, reply: Reply) -> None:
        """The provider's opened credentials for ``mode``, to walk its lists."""
        provider, credentials = self.ledger.configured(msg.provider, msg.mode)
        self.ledger.reply_read(
            reply,
            {
                "provider": provider.name,
                "mode": msg.mode,
                "credentials": dict(credentials),
                "secrets": [f.name for f in provider.credential_fields if f.secret],
            },
        )

    async def reconciled(self, msg: m.Reconciled, reply: Reply) -> None:
        """Events a provider's list holds, applied as webhooks would have been (the node read
        them itself with the project's credentials: no signature to check), in one commit. A
        body the adapter cannot read is skipped: the list may hold types the node does not
        take."""
        provider = self.ledger.provider(msg.provider)
        events = []
        for body in msg.bodies:
            try:
                events.append(provider.normalize(body, msg.mode))
            except (MalformedPayload, ValueError, TypeError, KeyError, AttributeError):
                continue
        ops: list[Op] = []
        told = await self.applier.take_all(
            provider, msg.mode, tuple(events), b"".join(msg.bodies), SOURCE_SYNC, ops
        )
        self.ledger.commit(ops, reply, {"seen": len(msg.bodies), "learned": len(told)})

    async def walk_until(self, msg: m.WalkUntil, reply: Reply) -> None:
        """Keep the provider account's lists walked until at least ``msg.until``."""
        now = self.ledger.now_ms()
        ops = await self._walking(
            msg.provider, msg.mode, now, msg.until, first_due=now, since=msg.since
        )
        self.ledger.commit(ops, reply, None)

    async def _walking(
        self,
        provider: str,
        mode: str,
        now: int,
        until: int,
        first_due: int | None = None,
        since: int | None = None,
    ) -> list[Op]:
        """The writes that keep the provider account's lists walked until ``until`` (or
        later, where an earlier ask said so): a walk owed (``outbox.RECONCILE``, first due at
        ``first_due``, else in a period) if none is, reading from a period ago or ``since``
        if that is earlier, and how long to go on."""
        ledger = self.ledger
        name = f"{provider}|{mode}"
        walking = await ledger.lookup(keys.PROVIDER_OBJECT, _WALK, name)
        until = max(until, int(walking or 0))
        ops = [ledger.index_op(keys.PROVIDER_OBJECT, _WALK, name, str(until))]
        if walking is None:
            ops += outbox.enqueue_ops(
                ledger.project_id,
                "",
                provider,
                mode,
                outbox.RECONCILE,
                {"since": min(now - _every_ms(ledger), now if since is None else since)},
                now,
                due_ms=first_due if first_due is not None else now + _every_ms(ledger),
            )
        return ops

    async def walk_next(self, msg: m.WalkNext, reply: Reply) -> None:
        """When the next walk of a provider account's lists is due; None once a week has
        passed since asking last learned something (the walks stop, and the record of them
        goes)."""
        ledger = self.ledger
        name = f"{msg.provider}|{msg.mode}"
        until = await ledger.lookup(keys.PROVIDER_OBJECT, _WALK, name)
        if until is None or ledger.now_ms() >= int(until):
            ops = [ledger.unindex_op(keys.PROVIDER_OBJECT, _WALK, name)] if until else []
            ledger.commit(ops, reply, None)
            return
        ledger.reply_read(reply, ledger.now_ms() + _every_ms(ledger))

    async def looks_ended(self, msg: m.LooksEnded, reply: Reply) -> None:
        """A checkout still open when the node stops asking (CONTRACT 4.3a: every transaction
        ends or is flagged): canceled at the provider where the provider never ends one by
        itself (Paddle: its answer is applied like a webhook), else flagged."""
        ledger = self.ledger
        tx = await ledger.tx(msg.tx_id)
        if tx is None or tx["status"] not in _OPEN:
            reply(None)
            return
        provider = PROVIDERS[tx["provider"]]
        mode = "test" if tx["isTest"] else "live"
        if tx["status"] == Status.PROCESSING:
            # the buyer paid and the money is settling: never canceled, never called unpaid
            flag(tx, [{"code": attention.STILL_PROCESSING}])
            ops = ledger.tx_ops(tx)
        elif CANCEL_CHECKOUT in provider.follow_ups:
            ops = ledger.follow_up_ops(tx, provider.name, mode, (FollowUp(CANCEL_CHECKOUT),))
        else:
            flag(tx, [{"code": attention.STILL_OPEN}])
            ops = ledger.tx_ops(tx)
        ledger.commit(ops, reply, None)

    async def tx_of_ref(self, msg: m.TxOfRef, reply: Reply) -> None:
        linked = await self.ledger.lookup(keys.PROVIDER_REF, msg.provider, msg.ref)
        tx = await self.ledger.tx(linked) if linked else None
        found = tx is not None and tx["isTest"] == (msg.mode == "test")
        self.ledger.reply_read(reply, tx["id"] if found and tx else None)


def _every_ms(ledger: Ledger) -> int:
    """How often the node asks (``EDGE_SYNC_EVERY_S``), in ms."""
    return int(ledger.ctx.settings.sync_every_s * 1000)
