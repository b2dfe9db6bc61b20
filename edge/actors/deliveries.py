"""A provider's webhook delivery, handed to its project's actor by the caller's own task (the
HTTP route's), no task of its own.

An HMAC-signed delivery (Stripe, Paddle, BTCPay) is one message: the actor charges the webhook
rate bucket, checks the signature with the project's secrets, applies the event and answers once
it is durable. A provider whose check may call out (PayPal) takes three steps:

1. ``Webhook``: the actor charges the webhook rate bucket and answers ``WebhookKeys`` (the
   enabled provider and the project's opened credentials) at once;
2. the signature is checked here, off the actor (a provider may fetch its signing certificate:
   the actor takes its other messages meanwhile);
3. the verdict (``WebhookVerified`` or ``WebhookRefused``) goes back to the actor, which answers
   once what it wrote is durable.

The node stops its HTTP front (in-flight requests finish) before the actors drain, so a
delivery between its steps is never cut off by a drain.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import httpx

from edge.actors import messages as m
from edge.actors.registry import ActorRegistry
from edge.errors import ContractError
from edge.providers.base import Delivery, SignatureInvalid


async def deliver(
    registry: ActorRegistry,
    http: httpx.AsyncClient,
    project_id: str,
    delivery: m.Webhook,
    wall_s: Callable[[], float] = time.time,
) -> m.Answer:
    """The actor's answer to ``delivery``, with its RateLimit-* headers; a refusal is raised
    (with them too)."""
    reply = await registry.call(project_id, delivery)
    headers: dict[str, str] = {}
    if isinstance(reply, m.Answer):
        reply, headers = reply.value, reply.headers
    if not isinstance(reply, m.WebhookKeys):
        return m.Answer(reply, headers)  # checked and applied by the actor in place (an HMAC)
    keys = reply
    verdict: m.WebhookVerified | m.WebhookRefused
    try:
        mode = await keys.provider.verify_webhook(
            Delivery(delivery.headers, delivery.body, keys.credentials, wall_s(), http)
        )
    except SignatureInvalid as exc:
        verdict = m.WebhookRefused(delivery.provider, exc.reason, exc.message, delivery.body)
    else:
        verdict = m.WebhookVerified(delivery.provider, mode, delivery.body)
    try:
        answer = await registry.call(project_id, verdict, internal=True)
    except ContractError as failure:
        raise failure.with_headers(headers) from None
    return m.Answer(answer, headers)
