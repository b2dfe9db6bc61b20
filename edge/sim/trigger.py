"""``edge trigger``: send a correctly signed simulated provider webhook for a test transaction
to this node's own webhook endpoint, so it runs through the whole pipeline (signature,
normalization, deduplication, transitions, storage) exactly as a real delivery would."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from typing import Any

import httpx

from edge.errors import Conflict, InvalidRequest
from edge.providers.stripe.signature import sign_header
from edge.sim.stripe.events import event_for_trigger

# provider -> (event builder, signer): the body bytes and the signature headers for them
Builder = Callable[[str, Mapping[str, Any]], dict[str, Any]]
Signer = Callable[[Mapping[str, Any], bytes], dict[str, str]]


def _stripe_headers(credentials: Mapping[str, Any], body: bytes) -> dict[str, str]:
    return {"Stripe-Signature": sign_header(credentials["webhookSecret"], body, int(time.time()))}


SIMULATED: dict[str, tuple[Builder, Signer]] = {"stripe": (event_for_trigger, _stripe_headers)}


def _tx_for_builder(material: Mapping[str, Any]) -> dict[str, Any]:
    tx = dict(material["tx"])
    sub = material.get("subscription") or {}
    tx["subscriptionRef"] = sub.get("providerRef")
    tx["providerCustomer"] = sub.get("providerCustomer")
    return tx


async def send_simulated(
    http: httpx.AsyncClient,
    node_url: str,
    project_id: str,
    provider: str,
    event_type: str,
    material: Mapping[str, Any],
) -> dict[str, Any]:
    """Build, sign and deliver one event; return what the node answered."""
    if provider not in SIMULATED:
        raise Conflict(
            "not_simulated",
            f"There is no simulator for {provider}; try: {', '.join(SIMULATED)}.",
        )
    build, sign = SIMULATED[provider]
    try:
        event = build(event_type, _tx_for_builder(material))
    except ValueError as exc:
        raise InvalidRequest("invalid_request", str(exc), field="type") from None
    body = json.dumps(event).encode()
    headers = {"Content-Type": "application/json", **sign(material["credentials"], body)}
    response = await http.post(
        f"{node_url}/webhook/{provider}/{project_id}", content=body, headers=headers
    )
    return {
        "providerEventId": event["id"],
        "providerType": event["type"],
        "status": response.status_code,
        "answer": response.json(),
    }
