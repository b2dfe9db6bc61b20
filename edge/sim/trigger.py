"""``edge trigger``: send a correctly signed simulated provider webhook for a test transaction
to this node's own webhook endpoint, so it runs through the whole pipeline (signature,
normalization, deduplication, transitions, storage) exactly as a real delivery would.

Each provider's ``Trigger`` is part of its simulator's registration (``edge.sim.registry``);
this module knows no provider by name."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from edge.domain.events import Simulated
from edge.errors import Conflict

# (normalized event type, the transaction as the builder reads it) -> the provider's event
Builder = Callable[[str, Mapping[str, Any]], dict[str, Any]]
# (an HTTP client, the mode's opened credentials, body) -> the signature headers a real delivery
# carries (PayPal's are made by its simulator, which holds the signing key)
Signer = Callable[[httpx.AsyncClient, Mapping[str, Any], bytes], Awaitable[dict[str, str]]]
# the provider's event -> the id the node deduplicates it on
EventId = Callable[[Mapping[str, Any]], str]


def _event_id(event: Mapping[str, Any]) -> str:
    return str(event["id"])


@dataclass(frozen=True)
class Trigger:
    """How one provider's simulated deliveries are built and signed."""

    events: tuple[str, ...]  # the normalized event types it can send
    build: Builder
    sign: Signer
    event_id: EventId = _event_id

    async def send(self, http: httpx.AsyncClient, ask: Simulated) -> dict[str, Any]:
        """Build, sign and deliver one event; return what the node answered."""
        material = ask.material
        try:
            event = self.build(ask.event_type, _tx_for_builder(material))
        except ValueError as exc:
            # a type this provider's simulator cannot send: a conflict with the provider asked
            # for (another may send it), as with a provider that has no simulator
            raise Conflict("not_simulated", str(exc), field="type") from None
        body = json.dumps(event).encode()
        headers = {
            "Content-Type": "application/json",
            **await self.sign(http, material["credentials"], body),
        }
        response = await http.post(
            f"{ask.node_url}/webhook/{ask.provider}/{ask.project_id}",
            content=body,
            headers=headers,
        )
        return {
            "providerEventId": self.event_id(event),
            "providerType": event.get("type") or event.get("event_type"),
            "status": response.status_code,
            "answer": response.json(),
        }


def _tx_for_builder(material: Mapping[str, Any]) -> dict[str, Any]:
    tx = dict(material["tx"])
    sub = material.get("subscription") or {}
    tx["subscriptionRef"] = sub.get("providerRef")
    tx["providerCustomer"] = sub.get("providerCustomer")
    return tx
