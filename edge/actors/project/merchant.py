"""What the merchant's server (and the operator's tools) do to a transaction: mark a pay-by-mail
one paid, cancel one, open a subscription's billing portal, and fetch what ``edge trigger``
needs to sign a simulated event (refunds: ``refunds``)."""

from __future__ import annotations

import logging
from typing import Any

from edge.actors import messages as m
from edge.actors.project.ledger import Ledger, Reply
from edge.actors.project.story import node_event
from edge.actors.records import iso_or_none, transaction_view
from edge.domain.events import EventType
from edge.domain.status import Status
from edge.domain.urls import handout_allowed
from edge.errors import (
    Conflict,
    ContractError,
    InvalidTransition,
    NotFound,
    ProviderError,
    tx_not_found,
)
from edge.providers.base import PortalRequest, Provider
from edge.store.engine import Op

REFUNDS_KEPT = 50  # refund requests remembered per transaction

log = logging.getLogger("edge.actors")


class MerchantActions:
    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger

    async def mark_paid(self, msg: m.MarkPaid, reply: Reply) -> None:
        ledger = self.ledger
        tx = await ledger.visible_tx(msg.tx_id, msg.mode)
        if tx["provider"] != "manual":
            raise Conflict("not_manual", "Only pay-by-mail transactions are marked paid by hand.")
        _require_pending(tx, "only a pending one can be marked paid")
        metadata = dict(tx.get("metadata") or {})
        if msg.note:
            metadata["note"] = msg.note
        ops: list[Op] = []
        await node_event(
            ledger, tx, EventType.MANUAL_MARKED_PAID, Status.SUCCEEDED, ops, metadata=metadata
        )
        ledger.commit(ops, reply, transaction_view(tx))

    async def cancel(self, msg: m.CancelTx, reply: Reply) -> None:
        ledger = self.ledger
        tx = await ledger.visible_tx(msg.tx_id, msg.mode)
        # CONTRACT 4.5: a pending one is abandoned; a processing one's money is on its way (a
        # crypto payment confirming, a bank debit clearing): canceled, it would come anyway, as
        # money for an ended checkout
        _require_pending(tx, "only a pending one can be canceled")
        tx["reason"] = "canceled by the merchant"
        ops: list[Op] = []
        await node_event(ledger, tx, EventType.CHECKOUT_CANCELED, Status.CANCELED, ops)
        ledger.commit(ops, reply, transaction_view(tx))

    async def portal_url(self, msg: m.PortalUrl, reply: Reply) -> None:
        ledger = self.ledger
        sub = await ledger.subscription(msg.subscription_id)
        if sub is None or (msg.mode is not None and sub["isTest"] != (msg.mode == "test")):
            raise NotFound("not_found", "No subscription with this id in this project.")
        mode = "test" if sub["isTest"] else "live"
        provider, credentials = ledger.configured(sub["provider"], mode)
        return_url = ledger.redirect(msg.return_url, ledger.project["successUrl"], "returnUrl")
        request = PortalRequest(
            subscription=dict(sub),
            credentials=credentials,
            return_url=return_url,
            http=ledger.ctx.http,
        )
        # Off the actor: a provider call never holds up this project's other requests.
        ledger.ctx.nursery.start_soon(_call_portal, provider, request, reply)

    async def trigger_material(self, msg: m.TriggerMaterial, reply: Reply) -> None:
        ledger = self.ledger
        tx = await ledger.tx(msg.tx_id)
        if tx is None:
            raise tx_not_found()
        if not tx["isTest"]:
            raise Conflict(
                "live_transaction",
                "Simulated events are sent for test-mode transactions only.",
            )
        if tx["provider"] != msg.provider:
            raise Conflict("provider_mismatch", f"This transaction was paid with {tx['provider']}.")
        _, credentials = ledger.configured(msg.provider, "test")
        sub = await ledger.subscription(tx["subscriptionId"]) if tx.get("subscriptionId") else None
        ledger.reply_read(
            reply,
            {
                "tx": dict(tx),
                "subscription": dict(sub) if sub else None,
                "credentials": dict(credentials),
            },
        )

    async def follow_up_target(self, msg: m.FollowUpTarget, reply: Reply) -> None:
        target = await self.ledger.follow_up_target(msg.tx_id, msg.mode, msg.action)
        self.ledger.reply_read(reply, target, msg.tx_id)


async def _call_portal(provider: Provider, request: PortalRequest, reply: Reply) -> None:
    try:
        result = await provider.portal_url(request)
    except ContractError as failure:
        reply(failure)
        return
    except Exception as exc:
        log.warning("%s portal session failed: %r", provider.name, exc)
        reply(
            ProviderError(
                "provider_error",
                f"{provider.name} did not create a portal session.",
                retryable=True,
            )
        )
        return
    if not handout_allowed(result.url):
        log.warning("%s answered a portal address that is not https", provider.name)
        reply(
            ProviderError("provider_error", f"{provider.name} answered an unsafe portal address.")
        )
        return
    reply(
        {
            "url": result.url,
            "provider": provider.name,
            "expiresAt": iso_or_none(result.expires_at_ms),
        }
    )


def _require_pending(tx: dict[str, Any], rule: str) -> None:
    """The merchant's hand on a transaction (marked paid, canceled) is for a pending one."""
    if tx["status"] != Status.PENDING:
        raise InvalidTransition(
            "invalid_transition",
            f"The transaction is {tx['status']}; {rule}.",
            extra={"status": tx["status"]},
        )
