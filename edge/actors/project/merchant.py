"""What the merchant's server (and the operator's tools) do to a transaction: mark a pay-by-mail
one paid, cancel one, refund one, open a subscription's billing portal, and fetch what
``edge trigger`` needs to sign a simulated event."""

from __future__ import annotations

import logging
from typing import Any

from edge.actors import messages as m
from edge.actors.project import story
from edge.actors.project.ledger import Ledger, Reply
from edge.actors.project.story import node_event
from edge.actors.records import iso_or_none, refund_view, transaction_view
from edge.domain import ids
from edge.domain.errors import InvalidInput
from edge.domain.events import EventType
from edge.domain.money import to_minor, to_wire
from edge.domain.status import Kind, Status, can_transition
from edge.domain.urls import handout_allowed
from edge.errors import (
    Conflict,
    ContractError,
    InvalidTransition,
    NotFound,
    ProviderError,
)
from edge.providers.base import REFUND, PortalRequest, Provider
from edge.providers.registry import PROVIDERS
from edge.store import outbox
from edge.store.writer import Op

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
        _require_transition(tx, Status.SUCCEEDED, "only a pending one can be marked paid")
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
        _require_transition(tx, Status.CANCELED, "only a pending or processing one can be canceled")
        tx["reason"] = "canceled by the merchant"
        ops: list[Op] = []
        await node_event(ledger, tx, EventType.CHECKOUT_CANCELED, Status.CANCELED, ops)
        ledger.commit(ops, reply, transaction_view(tx))

    async def refund(self, msg: m.RefundTx, reply: Reply) -> None:
        """Give money back for a paid transaction (CONTRACT 4.5): pay by mail records it at
        once; a provider's refund call is owed from the durable queue, and the provider's own
        webhook moves the transaction when the money has moved."""
        ledger = self.ledger
        tx = await ledger.visible_tx(msg.tx_id, msg.mode)
        if tx["status"] not in (Status.SUCCEEDED, Status.PARTIALLY_REFUNDED):
            raise InvalidTransition(
                "invalid_transition",
                f"The transaction is {tx['status']}; only a paid one can be refunded.",
                extra={"status": tx["status"]},
            )
        provider = PROVIDERS[tx["provider"]]
        if not provider.refunds or tx["kind"] != Kind.PAYMENT:
            raise Conflict(
                "refund_unsupported",
                f"Refund this {tx['kind']} in {provider.default_label}'s own dashboard: the"
                " node refunds one-off payments of providers with a refund call.",
            )
        mode = "test" if tx["isTest"] else "live"
        if provider.name != "manual":
            ledger.configured(provider.name, mode)  # provider_not_enabled while it is off
        charged, given_back = story.refunded(tx)
        asked = [r for r in tx.get("refunds") or () if await self._owed(r)]
        left = charged - max(given_back, sum(r["amount"] for r in asked))
        try:
            amount = left if msg.amount is None else to_minor(msg.amount, tx["currency"])
        except InvalidInput as wrong:
            # the transaction's currency decides: 422, the request alone was well formed
            raise InvalidTransition("invalid_amount", wrong.message, field="amount") from None
        if not 0 < amount <= left:
            raise Conflict(
                "refund_too_large",
                f"At most {to_wire(max(left, 0), tx['currency'])} {tx['currency']} is left to"
                " refund (refunds already made or asked for count).",
                field="amount",
                extra={"refundable": to_wire(max(left, 0), tx["currency"])},
            )
        problem = provider.price_problem(amount, tx["currency"], "refund")
        if problem is not None and problem.field != "name":
            raise InvalidTransition("invalid_amount", f"{problem.rule}.", field="amount")
        now = ledger.now_ms()
        refund_id = f"rf_{ids.new_ulid()}"
        refund: dict[str, Any] = {
            "id": refund_id,
            "amount": amount,
            "reason": msg.reason,
            "requestedAt": now,
        }
        ops: list[Op] = []
        if provider.name == "manual":
            await story.node_refund(ledger, tx, refund_id, amount, ops, refundId=refund_id)
            refund["state"] = "done"
        else:
            entry = outbox.enqueue_ops(
                ledger.project_id,
                tx["id"],
                provider.name,
                mode,
                REFUND,
                {
                    "refundId": refund_id,
                    "amount": amount,
                    "reason": msg.reason,
                    # all of it: the provider's own "full" refund (Paddle's type full gives
                    # back what it charged, tax and all)
                    "whole": amount == charged and given_back == 0 and not asked,
                },
                now,
            )
            refund["entryId"] = outbox.entry_id_of(entry)
            refund["state"] = "requested"
            ops += entry
        tx["refunds"] = [*(tx.get("refunds") or ())[-(REFUNDS_KEPT - 1) :], refund]
        ops += ledger.tx_ops(tx)
        ledger.commit(ops, reply, refund_view(tx, refund))

    async def _owed(self, refund: dict[str, Any]) -> bool:
        """Is a refund the node asked for still owed or done (not refused for good)?"""
        if refund.get("state") == "done" or not refund.get("entryId"):
            return True
        entry = await outbox.entry(self.ledger.ctx.store, refund["entryId"])
        return entry is None or entry["state"] not in (outbox.FAILED, outbox.DROPPED)

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
            raise NotFound("not_found", "No transaction with this id in this project.")
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
        target = await self.ledger.follow_up_target(msg.tx_id, msg.mode)
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


def _require_transition(tx: dict[str, Any], target: Status, rule: str) -> None:
    if not can_transition(Kind.PAYMENT, tx["status"], target):
        raise InvalidTransition(
            "invalid_transition",
            f"The transaction is {tx['status']}; {rule}.",
            extra={"status": tx["status"]},
        )
