"""Webhook deliveries to one project: the verdict on each, then the event applied.

verify (the provider's signature over the raw bytes, each mode's secrets; the one that matches
decides ``isTest``) -> normalize and bound the values (``event_records``) -> apply it to the
project in one walk (``applying``: dedup, match, check the money, fold, store, count) -> reply
after the commit.

An HMAC signature (Stripe, Paddle, BTCPay) is checked in place, in the same message: it needs
only the project's secrets. A provider whose check may call out (PayPal fetches its signing
certificate) is checked off the actor, in the caller's task (``edge.actors.deliveries``): the
actor hands out the opened credentials at once and goes on with its other messages; the verdict
comes back as a message (``WebhookVerified`` or ``WebhookRefused``) that the actor applies
without waiting.

Refused deliveries are kept (the last ``REJECTED_KEPT``) with time, provider, reason and a hash
of the body, so a merchant can be told exactly why a provider's webhooks fail.
"""

from __future__ import annotations

import hashlib
import logging
import time
from typing import Any

from edge.actors import messages as m
from edge.actors.project.applying import EventApplier
from edge.actors.project.event_records import bounded, normalized
from edge.actors.project.ledger import Reply
from edge.domain import ids
from edge.domain.events import SOURCE_NODE
from edge.domain.modes import MODES
from edge.errors import ContractError, InvalidRequest, NotFound, Unauthorized
from edge.providers.base import Delivery, MalformedPayload, SignatureInvalid
from edge.store import keys
from edge.store.codec import pack
from edge.store.engine import Op

log = logging.getLogger("edge.actors")

REJECTED_KEPT = 1000


class WebhookIntake:
    def __init__(self, applier: EventApplier) -> None:
        self.ledger = ledger = applier.ledger
        self.applier = applier
        self._rejected: list[bytes] | None = None  # keys, oldest first, loaded on first use
        # provider -> (the project's config version, its keys): opened once a version
        self._keys: dict[str, tuple[int, m.WebhookKeys]] = {}
        ledger.on_reload(self._forget_rejected)

    # -- entry ------------------------------------------------------------------------

    async def receive(self, msg: m.Webhook, reply: Reply) -> None:
        """A delivery checked, applied and answered here when the provider's signature needs
        no call out (an HMAC: microseconds); else the enabled provider and this project's
        opened credentials, for the caller to check the signature with
        (``edge.actors.deliveries``)."""
        try:
            keys = self._keys_for(msg.provider)
        except NotFound as failure:
            # kept with the signature refusals: the merchant's one clue that the provider the
            # webhooks come from was never turned on here (CONTRACT 4.3)
            await self._reject(
                msg.provider, msg.body, failure.code, failure.code, failure.message, reply, failure
            )
            return
        provider = keys.provider
        if not provider.verifies_offline:
            reply(keys)
            return
        delivery = Delivery(
            msg.headers, msg.body, keys.credentials, time.time(), self.ledger.ctx.http
        )
        try:
            mode = await provider.verify_webhook(delivery)
        except SignatureInvalid as exc:
            await self.refused(
                m.WebhookRefused(msg.provider, exc.reason, exc.message, msg.body), reply
            )
        else:
            await self.verified(m.WebhookVerified(msg.provider, mode, msg.body), reply)

    def _keys_for(self, provider_name: str) -> m.WebhookKeys:
        """The enabled provider and its opened credentials by mode (the modes configured):
        opened once a configuration version."""
        ledger = self.ledger
        known = self._keys.get(provider_name)
        if known is None or known[0] != ledger.config_version:
            provider = ledger.provider(provider_name)
            opened = {mode: ledger.credentials(provider, mode) for mode in MODES}
            credentials = {
                mode: plain for mode, plain in opened.items() if provider.is_configured(plain)
            }
            known = self._keys[provider_name] = (
                ledger.config_version,
                m.WebhookKeys(provider, credentials),
            )
        return known[1]

    async def verified(self, msg: m.WebhookVerified, reply: Reply) -> None:
        provider = self.ledger.provider(msg.provider)
        try:
            event = bounded(normalized(provider, msg.body, msg.mode))
        except MalformedPayload as exc:
            await self._reject(
                msg.provider,
                msg.body,
                "malformed_payload",
                str(exc),
                str(exc),
                reply,
                InvalidRequest(
                    "malformed_payload",
                    f"The body verified but is not a readable event: {exc}",
                ),
            )
        else:
            ops: list[Op] = []
            answer, outcome = await self.applier.take(provider, msg.mode, event, msg.body, ops)
            self._answer(ops, answer, reply)
            self.ledger.ctx.metrics.webhook(provider.name, outcome)

    async def refused(self, msg: m.WebhookRefused, reply: Reply) -> None:
        failure = Unauthorized(
            "signature_invalid",
            _SIGNATURE_MESSAGES.get(msg.reason, msg.message),
            extra={"reason": msg.reason},
        )
        await self._reject(
            msg.provider, msg.body, "signature_invalid", msg.reason, msg.message, reply, failure
        )

    async def reported(self, msg: m.FollowUpReported, reply: Reply) -> None:
        """A provider's answer to a follow-up, applied as its events (each deduplicated like a
        delivery) in one commit; ``reply`` once it is durable."""
        provider = self.ledger.provider(msg.provider)
        ops: list[Op] = []
        told = await self.applier.take_all(
            provider, msg.mode, msg.events, msg.body, SOURCE_NODE, ops
        )
        self.ledger.commit(ops, reply, {"applied": len(told)})

    # -- accepted deliveries ----------------------------------------------------------

    def _answer(self, ops: list[Op], answer: dict[str, Any], reply: Reply) -> None:
        """Reply once what the answer shows is durable: the writes, or a duplicate's first."""
        if ops:
            self.ledger.commit(ops, reply, answer)
        else:
            self.ledger.reply_read(reply, answer)

    # -- refused deliveries ------------------------------------------------------------

    async def _reject(
        self,
        provider: str,
        body: bytes,
        code: str,
        reason: str,
        detail: str,
        reply: Reply,
        failure: ContractError,
    ) -> None:
        """Keep a refused delivery: ``detail`` is the node's own account of it (an offset, a
        parse error), never the body."""
        ledger = self.ledger
        ledger.ctx.metrics.webhook(provider, reason if code == "signature_invalid" else code)
        # the merchant's first clue when every payment stays pending: say it where operators look
        log.warning(
            "refused a %s webhook for project %s: %s (%s)",
            provider,
            ledger.project_id,
            code,
            reason,
        )
        if self._rejected is None:
            prefix = keys.prefix(ledger.project_id, keys.REJECTED)
            self._rejected = [key for key, _ in await ledger.ctx.store.scan(prefix)]
        record = {
            "at": ledger.now_ms(),
            "provider": provider,
            "code": code,
            "reason": reason,
            "detail": detail[:300],
            "bodySha256": hashlib.sha256(body).hexdigest(),
            "bodyBytes": len(body),
        }
        key = keys.record(ledger.project_id, keys.REJECTED, ids.new_ulid())
        ops: list[Op] = [("records", key, pack(record))]
        self._rejected.append(key)
        while len(self._rejected) > REJECTED_KEPT:
            ops.append(("records", self._rejected.pop(0), None))
        ledger.commit(ops, reply, failure)

    def _forget_rejected(self) -> None:
        self._rejected = None


_SIGNATURE_MESSAGES = {
    "missing_header": "The provider's signature header is missing.",
    "malformed_header": "The provider's signature header cannot be read.",
    "timestamp_out_of_tolerance": "The signature's timestamp is more than 300 seconds off.",
    "no_matching_signature": "No signature matches this project's webhook secrets for this body.",
}
