"""Opening a checkout (CONTRACT 4.1): the pending transaction first, then the provider call.

The transaction is written (pending, with its ``checkout.created`` event) before the provider
is called, and the provider is called only once that write is durable, off the actor: a slow
provider never holds up this project's other requests. Its answer comes back as a
``CheckoutFinished`` message, which stores the provider's reference (or cancels the
transaction when the provider refused) and answers the buyer after that commit.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from typing import Any

import trio

from edge.actors import messages as m
from edge.actors.project.applying import EventApplier
from edge.actors.project.health import ProviderHealth
from edge.actors.project.idempotency import IdempotencyKeys, Resume
from edge.actors.project.ledger import Ledger, Reply
from edge.actors.project.quota import Quota
from edge.actors.project.story import node_event
from edge.actors.records import iso_or_none
from edge.actors.registry import ActorRef
from edge.domain import ids
from edge.domain.events import EventType
from edge.domain.money import to_wire
from edge.domain.returns import Outcome, outcome
from edge.domain.status import Kind, Status, can_transition
from edge.domain.urls import handout_allowed, with_tx_id
from edge.errors import (
    Conflict,
    ContractError,
    NotFound,
    ProviderError,
    Unavailable,
    tx_not_found,
    unavailable,
)
from edge.providers import checking, prices
from edge.providers.base import CheckoutRequest, CheckoutResult, Provider
from edge.providers.offers import display_name
from edge.providers.registry import PROVIDERS
from edge.store import keys, outbox
from edge.store.engine import Op
from edge.store.writer import Ticket

log = logging.getLogger("edge.actors")
CHECKOUT = "checkout"  # a set-up record learnt from a checkout, not from saving credentials
# an approval whose payment (a capture) is still owed holds its checkout's end this long at most
OWED_GRACE_MS = 3_600_000
# how long past its first call's time a retry with its key has to take an unanswered checkout
# up before it ends (``Checkouts._unanswered_guard``)
UNANSWERED_GRACE_MS = 60_000
# a checkout's first request, cut short, is taken up again no sooner than its provider call's
# time limit and this long after its making (``_resume``)
FIRST_CALL_MARGIN_S = 5.0
# a call to a provider that honours no key is not begun with less than this share of its time
# left (the rest went on making the checkout durable)
MIN_CALL_SHARE = 0.25


class Checkouts:
    def __init__(
        self,
        ledger: Ledger,
        idempotency: IdempotencyKeys,
        quota: Quota,
        applier: EventApplier,
        ref: ActorRef,
        health: ProviderHealth,
    ) -> None:
        self.ledger = ledger
        self.health = health
        self.idempotency = idempotency
        self.applier = applier
        self.quota = quota
        self.ref = ref
        self.calling: set[str] = set()  # the transactions whose checkout is at its provider

    async def start(self, msg: m.StartCheckout, reply: Reply) -> None:
        ledger = self.ledger
        if msg.idempotency_key is not None:
            known = await self.idempotency.answer_known(msg, reply)
            if isinstance(known, Resume):
                await self._resume(known.tx_id, msg, reply)
                return
            if known:
                return
        if msg.mode == "live":
            await self.quota.require_live_allowance()
        provider, credentials = ledger.configured(msg.provider, msg.mode)
        product = ledger.product(msg.product_id)
        if product["kind"] == Kind.SUBSCRIPTION and msg.quantity != 1:
            # the product's kind decides it, not the request's shape: a conflict, not a 400
            raise Conflict(
                "quantity_not_allowed", "A subscription is bought one at a time.", field="quantity"
            )
        if product["kind"] == Kind.SUBSCRIPTION and not provider.supports_subscriptions:
            # said before anything is stored; public-info does not offer it either
            raise Conflict(
                "subscription_not_supported",
                f"{display_name(provider)} takes one-off payments only; choose another way to pay.",
                field="provider",
            )
        refused = prices.problem(provider, product, msg.quantity)
        if refused is not None:  # said before anything is stored: nothing stays pending
            field = "quantity" if msg.quantity > 1 and refused.field == "amount" else "productId"
            raise Conflict("amount_not_supported", f"{refused.rule}.", field=field)
        tx_id = msg.tx_id or ids.new_tx_id()
        if await ledger.tx(tx_id) is not None:
            raise Conflict("tx_exists", "This transaction id is already used.", field="txId")
        project = ledger.project
        # wherever the buyer is sent, the merchant's {TX_ID} names this transaction
        success_url = with_tx_id(
            ledger.redirect(msg.success_url, project["successUrl"], "successUrl"), tx_id
        )
        cancel_url = with_tx_id(
            ledger.redirect(msg.cancel_url, project["cancelUrl"], "cancelUrl"), tx_id
        )
        now = ledger.now_ms()
        tx: dict[str, Any] = {
            "id": tx_id,
            "projectId": ledger.project_id,
            "kind": product["kind"],
            "provider": provider.name,
            "productId": product["id"],
            "quantity": msg.quantity,
            "status": str(Status.PENDING),
            "version": 1,
            "amount": prices.price_of(product, provider.name) * msg.quantity,
            "currency": product["currency"],
            "interval": product.get("interval"),
            "isTest": msg.mode == "test",
            "metadata": msg.metadata,
            "customerRef": msg.metadata.get("customerRef"),
            "reference": None,
            "providerRef": None,
            "subscriptionId": None,
            "reason": None,
            # where the buyer goes on to when they come back through the node (PayPal)
            "successUrl": success_url,
            "cancelUrl": cancel_url,
            "createdAt": now,
            "updatedAt": now,
        }
        ops: list[Op] = []
        if provider.uses_reference_code:
            tx["reference"] = await self._new_reference()
            ops.append(ledger.index_op(keys.REFERENCE, "", tx["reference"], tx_id))
        if msg.idempotency_key is not None:
            tx["idempotencyKey"], kept = self.idempotency.begin(msg, tx_id, reply)
            tx["idempotencyBodyHash"] = msg.body_hash
            ops += kept
            reply = self.idempotency.fan_out(tx["idempotencyKey"])
        # the checkout exists, pending, from this moment: the event took effect as it was made
        event_ops = ledger.event(tx, EventType.CHECKOUT_CREATED, appliedAt=now)
        ops += self._unanswered_guard(tx, provider.name, msg.mode, now)
        ops += ledger.tx_ops(tx)
        # tx ids are unique across projects: this lets the operator's tools find the project
        ops.append(("meta", keys.tx_owner(tx_id), ledger.project_id.encode()))
        ticket = ledger.submit(ops + event_ops)
        ledger.add(tx)
        request = await self._request(tx, provider, credentials, product)
        self._call_when_durable(ticket, provider, request, reply, now)

    def _call_when_durable(
        self,
        ticket: Ticket,
        provider: Provider,
        request: CheckoutRequest,
        reply: Reply,
        started_ms: int,
    ) -> None:
        """The provider is called only once ``ticket`` (the pending transaction, or a retry's
        start) is durable, and off the actor, so a slow provider never holds up this
        project's other requests; its time counts from ``started_ms``."""
        tx_id = request.tx["id"]
        self.calling.add(tx_id)

        def stored(error: BaseException | None) -> None:
            if error is not None:
                self.calling.discard(tx_id)
                reply(unavailable())
                return
            self.ledger.ctx.nursery.start_soon(
                self._call_provider, provider, request, reply, started_ms + self._call_ms()
            )

        ticket.when_durable(stored)

    async def _request(
        self,
        tx: dict[str, Any],
        provider: Provider,
        credentials: dict[str, Any],
        product: dict[str, Any],
        *,
        again: bool = False,
    ) -> CheckoutRequest:
        ledger = self.ledger
        mode = "test" if tx["isTest"] else "live"
        return_url = (
            f"{ledger.ctx.public_url}/return/{provider.name}/{ledger.project_id}/{tx['id']}"
        )
        return CheckoutRequest(
            tx=dict(tx),
            product=product,
            credentials=credentials,
            success_url=tx["successUrl"],
            cancel_url=tx["cancelUrl"],
            http=ledger.ctx.http,
            return_url=return_url,
            cancel_return_url=f"{return_url}/cancel",
            remembered=await ledger.lookup(
                keys.PROVIDER_OBJECT, provider.name, _price_key(tx, mode)
            ),
            again=again,
        )

    async def _resume(self, tx_id: str, msg: m.StartCheckout, reply: Reply) -> None:
        """The key's first request made ``tx_id`` and was cut short before its answer (its
        node crashed or lost the project): ask the provider again for that same transaction
        (its calls are idempotent by the transaction id, or it is asked what the first made:
        ``CheckoutRequest.again``), and answer as the first would have."""
        ledger = self.ledger
        tx = await ledger.tx(tx_id)
        if tx is None or tx["status"] != Status.PENDING:
            # ended meanwhile (expired, canceled by the merchant): that is the answer now
            failure = ProviderError(
                "provider_error",
                "The first request with this Idempotency-Key was cut short; its checkout has"
                " ended. Use a new key for a new checkout.",
            )
            if tx is None:
                reply(failure)
                return
            ledger.commit(await self.idempotency.remember(tx, failure), reply, failure)
            return
        mode = "test" if tx["isTest"] else "live"
        provider, credentials = ledger.configured(tx["provider"], mode)
        if not provider.checkout_keyed:
            # the first request's call may still be making the provider's object, which asking
            # cannot see yet: the retry comes back once that call has had its time
            called = int(tx.get("calledAt") or tx["createdAt"])  # the latest call's start
            left_ms = called + self._first_call_ms() - ledger.now_ms()
            if left_ms > 0:
                wait_s = math.ceil(left_ms / 1000)
                reply(
                    Unavailable(
                        "unavailable",
                        "The first request with this Idempotency-Key may still be at"
                        f" {display_name(provider)}; retry in {wait_s} s.",
                        headers={"Retry-After": str(wait_s)},
                    )
                )
                return
        product = ledger.product(tx["productId"])
        # when this call began, durably before it: a retry of this one, cut short in turn,
        # waits for its time too
        tx["calledAt"] = ledger.now_ms()
        ticket = ledger.submit(ledger.tx_ops(tx))
        request = await self._request(tx, provider, credentials, product, again=True)
        reply = self.idempotency.resume(msg, reply)
        self._call_when_durable(ticket, provider, request, reply, tx["calledAt"])

    def _unanswered_guard(
        self, tx: dict[str, Any], provider_name: str, mode: str, now: int
    ) -> list[Op]:
        """An end owed, written with the pending transaction, for a checkout whose provider
        call never gets its answer recorded (the node stopped during it, or the project moved
        to another node): once that call has had its time and ``UNANSWERED_GRACE_MS`` for a
        retry with its key to take it up, the checkout ends (``expire``, ``unanswered``)
        rather than staying pending for ever; one answered by then is left as it is. Never
        deleted by the answer: the follow-up worker settles its entry (guarded on the entry
        as it read it), so nothing else ever writes it."""
        return outbox.enqueue_ops(
            self.ledger.project_id,
            tx["id"],
            provider_name,
            mode,
            outbox.EXPIRE,
            {outbox.UNANSWERED: True},
            now,
            due_ms=now + self._first_call_ms() + UNANSWERED_GRACE_MS,
        )

    def _call_ms(self) -> int:
        """How long a checkout's provider call may last, all told (``_call_provider``)."""
        return int(self.ledger.ctx.settings.provider_timeout_s * 1000)

    def _first_call_ms(self) -> int:
        """How long after its recorded start a checkout's provider call may still be making
        something there: its time, and a margin for the provider's own work and clocks apart."""
        return self._call_ms() + int(FIRST_CALL_MARGIN_S * 1000)

    def _setup_noted(self, tx: Mapping[str, Any], refused: str | None) -> list[Op]:
        """The project's record of its provider's set-up after a checkout (``refused``: the
        provider's words for a refusal a retry cannot change; None: it took the checkout or
        could not answer), written only when it changes: a refusal is shown on the dashboard
        beside the provider's credentials and logged once, until a checkout goes through."""
        ledger = self.ledger
        config = ledger.project["providers"].get(tx["provider"])
        if config is None:
            return []
        mode = "test" if tx["isTest"] else "live"
        checks = config.setdefault("checks", {})
        known = checks.get(mode) or {}
        was_refused = known.get("result") == checking.REFUSED and known.get("during") == CHECKOUT
        if refused is None:
            if not was_refused:
                return []
            checks[mode] = {"result": checking.OK, "during": CHECKOUT, "at": ledger.now_ms()}
            return ledger.config_changed()
        if was_refused and known.get("message") == refused:
            return []
        provider = PROVIDERS[tx["provider"]]
        checks[mode] = {
            "result": checking.REFUSED,
            "during": CHECKOUT,
            "field": f"{mode}.{checking.key_field(provider)}",
            "message": refused,
            "at": ledger.now_ms(),
        }
        log.warning(
            "project %s: %s refused a %s checkout (%s): the merchant's set-up must be fixed",
            ledger.project_id,
            provider.display_name or provider.name,
            mode,
            refused,
        )
        return ledger.config_changed()

    async def _new_reference(self) -> str:
        while True:
            code = ids.new_reference_code()
            if await self.ledger.lookup(keys.REFERENCE, "", code) is None:
                return code

    async def _call_provider(
        self, provider: Provider, request: CheckoutRequest, reply: Reply, deadline_ms: int
    ) -> None:
        """The provider asked to make the checkout; one that honours no idempotency key until
        ``deadline_ms`` (node clock) at the latest, whatever each step of the call is allowed
        (a retry of a checkout cut short counts on that: ``_resume``)."""
        result: CheckoutResult | ContractError
        # a provider that honours no key is held to the time its retry waits out (``_resume``);
        # the others' steps each have the client's own limits
        keyed = provider.checkout_keyed
        left_s = math.inf if keyed else (deadline_ms - self.ledger.now_ms()) / 1000
        if left_s < MIN_CALL_SHARE * self._call_ms() / 1000:
            # the store took the call's time to make the checkout durable: not the provider's
            # doing, and no call is made
            result = unavailable("The checkout could not be started in time; try again.")
        else:
            result = await self._asked(provider, request, left_s)
        try:
            await self.ref.send(m.CheckoutFinished(request.tx["id"], result, reply))
        except ContractError as failure:
            reply(failure)

    async def _asked(
        self, provider: Provider, request: CheckoutRequest, limit_s: float
    ) -> CheckoutResult | ContractError:
        """What the provider answered a checkout within ``limit_s``, or why it did not."""
        result: CheckoutResult | ContractError
        try:
            with trio.fail_after(limit_s):
                result = await provider.create_checkout(request)
            url = result.fields.get("url")
            if url is not None and not handout_allowed(url):
                log.warning("%s answered a checkout address that is not https", provider.name)
                result = ProviderError(
                    "provider_error", f"{provider.name} answered an unsafe checkout address."
                )
        except ContractError as failure:
            result = failure
        except trio.TooSlowError:
            result = ProviderError(
                "provider_error", f"{provider.name} did not answer in time.", retryable=True
            )
        except Exception as exc:
            log.warning("%s checkout for %s failed: %r", provider.name, request.tx["id"], exc)
            result = ProviderError(
                "provider_error",
                f"{provider.name} did not create the checkout.",
                retryable=True,
            )
        return result

    async def finish(self, msg: m.CheckoutFinished, done: Reply) -> None:
        done(None)
        ledger = self.ledger
        self.calling.discard(msg.tx_id)
        tx = await ledger.tx(msg.tx_id)
        assert tx is not None, "a checkout's transaction is durable before its provider call"
        if isinstance(msg.result, ContractError):
            failure = msg.result
            if isinstance(failure, ProviderError):
                # What the provider said stays with the transaction (its reason, for the
                # merchant); the caller, perhaps a buyer, learns only that the call failed:
                # never an upstream status or error that would map someone else's network.
                tx["reason"] = f"{failure.code}: {failure.message}"
                setup = self._setup_noted(tx, None if failure.retryable else failure.message)
                if failure.retryable:  # on the provider's side: a refusal is the set-up's
                    self.health.failed(tx["provider"], "test" if tx["isTest"] else "live")
                failure = ProviderError(
                    "provider_error",
                    f"{tx['provider']} did not create the checkout; try again."
                    if failure.retryable
                    # the shop's own set-up: waiting will not help whoever asked
                    else f"{tx['provider']} refused this shop's checkout; the shop must fix"
                    " its set-up. Choose another way to pay.",
                    retryable=failure.retryable,
                )
            else:
                setup = []
            ops = setup + await self.idempotency.remember(tx, failure)
            # the merchant may have canceled meanwhile: never move a status it cannot reach
            if can_transition(Kind.PAYMENT, tx["status"], Status.CANCELED):
                tx["reason"] = tx.get("reason") or f"{failure.code}: {failure.message}"
                await node_event(ledger, tx, EventType.CHECKOUT_CANCELED, Status.CANCELED, ops)
            ledger.commit(ops, msg.reply, failure)
            return
        result: CheckoutResult = msg.result
        if tx["status"] != Status.PENDING:
            # it ended while its provider was asked (canceled by the merchant, or its answer
            # taken for never coming): what the provider made now is handed to no one
            ended = ProviderError(
                "provider_error",
                f"This checkout ended ({tx['status']}) before {tx['provider']} answered;"
                " start a new checkout.",
                retryable=False,
            )
            ledger.commit(await self.idempotency.remember(tx, ended), msg.reply, ended)
            return
        tx["providerRef"] = result.provider_ref
        tx["checkout"] = result.fields
        tx["expiresAt"] = result.expires_at_ms
        ops = self._setup_noted(tx, None) + ledger.tx_ops(tx)
        self.health.worked(tx["provider"], "test" if tx["isTest"] else "live")
        if result.provider_ref:
            # the object the node created: from now on the only way events reach this checkout
            await self.applier.linked(tx, result.provider_ref, ops)
        provider = PROVIDERS[tx["provider"]]
        mode = "test" if tx["isTest"] else "live"
        if result.remember:
            ops.append(
                ledger.index_op(
                    keys.PROVIDER_OBJECT, provider.name, _price_key(tx, mode), result.remember
                )
            )
        if not provider.expires_checkouts and result.expires_at_ms is not None:
            # the provider will never say the buyer walked away: the node's own timer, durable
            ops += outbox.enqueue_ops(
                ledger.project_id,
                tx["id"],
                provider.name,
                mode,
                outbox.EXPIRE,
                {},
                ledger.now_ms(),
                due_ms=result.expires_at_ms,
            )
        if provider.sync is not None:
            # if its webhook never comes, the node asks the provider (edge.actors.sync)
            now = ledger.now_ms()
            ops += outbox.enqueue_ops(
                ledger.project_id,
                tx["id"],
                provider.name,
                mode,
                outbox.SYNC,
                {},
                now,
                due_ms=now + int(ledger.ctx.settings.sync_every_s * 1000),
            )
        body = {
            "txId": tx["id"],
            "provider": provider.name,
            "kind": provider.kind,
            "type": provider.checkout_type,
            **result.fields,
            "amount": to_wire(tx["amount"], tx["currency"]),
            "currency": tx["currency"],
            "isTest": tx["isTest"],
            "expiresAt": iso_or_none(result.expires_at_ms),
        }
        ops += await self.idempotency.remember(tx, body)
        ledger.commit(ops, msg.reply, body)

    async def expire(self, msg: m.ExpireCheckout, reply: Reply) -> None:
        """The node's own expiry of a checkout whose provider never reports one (CONTRACT 4.3)."""
        ledger = self.ledger
        tx = await ledger.tx(msg.tx_id)
        if tx is None:
            reply("the transaction is gone")
            return
        if msg.unanswered:
            await self._end_unanswered(tx, reply)
            return
        # a payment under way (a pending PayPal capture) was paid: the checkout's end is not its
        if tx["status"] != Status.PENDING:
            reply(f"nothing to expire: the transaction is {tx['status']}")
            return
        if ledger.now_ms() < int(tx.get("owedAt") or 0) + OWED_GRACE_MS:
            # the buyer approved (back on the return page, or as the provider told): the
            # payment the node owes the provider (a capture) decides, not the clock, while it
            # is being tried (an ended checkout's capture would be dropped); one that has not
            # happened in this long (declined, never approved) lets the checkout expire
            reply(
                unavailable(
                    "The buyer approved this checkout and its payment is still owed to the"
                    " provider; it expires if that has not happened within an hour."
                )
            )
            return
        ops: list[Op] = []
        await node_event(ledger, tx, EventType.CHECKOUT_EXPIRED, Status.EXPIRED, ops)
        ledger.commit(ops, reply, f"expired at {iso_or_none(tx.get('expiresAt'))}")

    async def _end_unanswered(self, tx: dict[str, Any], reply: Reply) -> None:
        """The unanswered guard's time (``_unanswered_guard``): a checkout whose provider's
        answer was recorded is the provider's to end; one still without it ends canceled, as a
        checkout the provider did not create does, and its key's retry is told so. Whatever
        the provider made meanwhile was never handed to anyone."""
        ledger = self.ledger
        if tx["status"] != Status.PENDING:
            reply(f"nothing to end: the transaction is {tx['status']}")
            return
        if tx.get("checkout") is not None or tx.get("providerRef"):
            reply("nothing to end: the provider's answer was recorded")
            return
        if tx["id"] in self.calling:  # a key's retry took it up: its answer decides
            reply(unavailable("This checkout's provider is being asked again; its answer decides."))
            return
        failure = ProviderError(
            "provider_error",
            f"{tx['provider']}'s answer to this checkout never came; start a new checkout.",
            retryable=False,  # (its key is answered so for its 24 hours)
        )
        tx["reason"] = f"{failure.code}: {failure.message}"
        ops = await self.idempotency.remember(tx, failure)
        await node_event(ledger, tx, EventType.CHECKOUT_CANCELED, Status.CANCELED, ops)
        ledger.commit(ops, reply, "canceled: the provider's answer never came")

    async def returned(self, msg: m.BuyerReturned, reply: Reply) -> None:
        """The buyer is back from the provider's page (CONTRACT 4.3). From its return address:
        what the provider is owed (PayPal's capture) is durable before the buyer is answered,
        once. From its cancel address: the checkout is canceled, when the provider's own id in
        the address shows it is this checkout's. Either way the answer says the outcome, and
        where the buyer goes on to."""
        ledger = self.ledger
        tx = await ledger.tx(msg.tx_id)
        provider = PROVIDERS.get(msg.provider)
        if tx is None or provider is None or tx["provider"] != provider.name:
            raise tx_not_found()
        if not provider.returns_through_node:
            raise NotFound("not_found", f"{provider.name} does not return buyers through the node.")
        ops: list[Op] = []
        owed = provider.returned(tx, msg.query)
        if msg.view_only:
            pass
        elif msg.canceled:
            await self._canceled_by_buyer(tx, provider, msg.query, ops)
        elif tx["status"] == Status.PENDING and not tx.get("returnedAt"):
            mode = "test" if tx["isTest"] else "live"
            tx["returnedAt"] = ledger.now_ms()
            if owed:
                tx["owedAt"] = tx["returnedAt"]  # the checkout's end waits for it (``expire``)
            ops += ledger.tx_ops(tx)
            ops += ledger.follow_up_ops(tx, provider.name, mode, owed)
        latest = await ledger.latest_event(tx["id"])
        latest_type = latest["type"] if latest is not None else None
        result = outcome(tx["status"], latest_type, canceled_by_buyer=msg.canceled)
        answer = m.Returned(
            result,
            display_name(provider),
            with_tx_id(tx.get("successUrl") or ledger.project["successUrl"], tx["id"]),
            with_tx_id(tx.get("cancelUrl") or ledger.project["cancelUrl"], tx["id"]),
            waiting=result is Outcome.PENDING and bool(owed),
        )
        if ops:
            ledger.commit(ops, reply, answer)
        else:
            ledger.reply_read(reply, answer, tx["id"])

    async def _canceled_by_buyer(
        self, tx: dict[str, Any], provider: Provider, query: Mapping[str, str], ops: list[Op]
    ) -> None:
        """Cancel a pending checkout the buyer walked away from at the provider. Only with the
        provider's id of this checkout in the address (PayPal appends its order as ``token``,
        which only the buyer's browser and the provider know): a transaction id alone, which a
        page may show, never cancels anyone's checkout."""
        if tx["status"] != Status.PENDING or tx.get("returnedAt"):
            return  # approved meanwhile, or already ended: the outcome says which
        if not tx.get("providerRef") or query.get("token") != tx["providerRef"]:
            return
        tx["reason"] = f"canceled by the buyer at {display_name(provider)}"
        await node_event(self.ledger, tx, EventType.CHECKOUT_CANCELED, Status.CANCELED, ops)


def _price_key(tx: Mapping[str, Any], mode: str) -> str:
    """What a remembered provider object (PayPal's plan) stands for: this product at this
    price, interval and mode. A changed price makes a new one."""
    return f"{mode}|{tx['productId']}|{tx['amount']}|{tx['currency']}|{tx.get('interval') or ''}"
