"""Helpers for the project actor's tests: a harness over a real store, a provider the test
drives, deliveries."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import trio
from support.client import MAILING_ADDRESS, ORIGIN
from support.nodes import node_settings

from edge.actors import messages as m
from edge.actors import queries
from edge.actors.context import NodeContext
from edge.actors.deliveries import deliver
from edge.actors.keyindex import KeyIndex
from edge.actors.project import ProjectActor
from edge.actors.project.ledger import Ledger
from edge.actors.rates import ProjectRates
from edge.actors.registry import Actor, ActorRef, ActorRegistry, open_registry
from edge.domain.convergence import Refund
from edge.domain.events import EventType
from edge.domain.status import Status
from edge.providers.base import (
    CheckoutRequest,
    CheckoutResult,
    CredentialField,
    Delivery,
    FollowUp,
    MalformedPayload,
    NormalizedEvent,
    Provider,
    SignatureInvalid,
)
from edge.sealing import Sealer
from edge.signing import Signer
from edge.store.lmdb.store import open_store
from edge.store.writer import open_writer

BOOK = {
    "id": "book",
    "name": "A book",
    "kind": "payment",
    "interval": None,
    "amount": 1999,
    "currency": "EUR",
    "overrides": {},
}


@asynccontextmanager
async def open_harness(path: Path) -> AsyncIterator[Harness]:
    """A project actor registry on a real store under ``path``, with no HTTP and no node."""
    settings = node_settings(path / "data")
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    with open_store(path / "store", map_size=2**26) as store:
        async with open_writer(store) as writer, httpx.AsyncClient() as http:
            ctx: NodeContext

            async def spawn(project_id: str, ref: ActorRef) -> Actor:
                return await ProjectActor.load(ctx, project_id, ref)

            async with open_registry(spawn, idle_s=3600) as registry:
                ctx = NodeContext(
                    settings=settings,
                    store=store,
                    writer=writer,
                    registry=registry,
                    sealer=Sealer(settings.secret_key),
                    signer=Signer.load(settings.data_dir),
                    http=http,
                    keys=KeyIndex(store),
                    manage_rates=ProjectRates(settings, tier=""),
                    bound_url="http://127.0.0.1:9",
                    public_url="http://127.0.0.1:9",
                )
                yield Harness(ctx, registry)


@dataclass
class Harness:
    ctx: NodeContext
    registry: ActorRegistry

    async def call(self, project_id: str, message: Any) -> Any:
        """The actor's reply, without the RateLimit-* it may carry; a delivery goes through its
        steps, as the HTTP route sends it."""
        if isinstance(message, m.Webhook):
            answer = await deliver(self.registry, self.ctx.http, project_id, message)
        else:
            answer = await self.registry.call(project_id, message)
        return answer.value if isinstance(answer, m.Answer) else answer

    async def project(self, *providers: str) -> str:
        """A project with the book and ``providers`` enabled in test mode."""
        view = await queries.create_project(
            self.ctx,
            {
                "name": "Shop",
                "successUrl": f"{ORIGIN}/thanks",
                "cancelUrl": f"{ORIGIN}/cart",
                "allowedOrigins": [ORIGIN],
                "tier": "free",
            },
        )
        project_id: str = view["id"]
        await self.call(project_id, m.PutProduct(dict(BOOK)))
        for name in providers:
            body = {"enabled": True, "label": None, "order": None, "test": CREDENTIALS[name]}
            await self.call(project_id, m.PutProvider(name, body))
        return project_id

    def ledger(self, project_id: str) -> Ledger:
        """The ledger of the project's actor (it must be loaded)."""
        actor = self.registry._entries[project_id].actor
        assert isinstance(actor, ProjectActor)
        return actor.ledger


class EchoProvider(Provider):
    """A provider the test drives: a delivery verifies when its ``x-signature`` is ``ok``,
    waiting first for ``GATE`` when one is set; its body is the event, as JSON."""

    gate: trio.Event | None = None
    checkout_gate: trio.Event | None = None  # its checkouts wait for it, when set
    checkouts: list[str] = []  # noqa: RUF012 (the transaction of each checkout call)
    again: list[bool] = []  # noqa: RUF012 (each checkout call's ``CheckoutRequest.again``)
    checkout_url = "https://pay.example/c/1"  # what its checkouts answer

    async def create_checkout(self, request: CheckoutRequest) -> CheckoutResult:
        EchoProvider.checkouts.append(request.tx["id"])
        EchoProvider.again.append(request.again)
        if EchoProvider.checkout_gate is not None:
            await EchoProvider.checkout_gate.wait()
        return CheckoutResult(fields={"url": EchoProvider.checkout_url}, provider_ref="c_1")

    async def verify_webhook(self, delivery: Delivery) -> str:
        if EchoProvider.gate is not None:
            await EchoProvider.gate.wait()
        if delivery.headers.get("x-signature") != "ok":
            raise SignatureInvalid("no_matching_signature")
        assert delivery.credentials["test"]["secret"] == "s3cret"  # opened, not sealed
        return delivery.headers.get("x-mode", "test")

    def normalize(self, body: bytes, mode: str) -> NormalizedEvent:
        data = json.loads(body)
        if not isinstance(data, dict):
            raise MalformedPayload("not an object")
        return NormalizedEvent(
            provider_event_id=data["id"],
            type=EventType(data.get("type", "payment.succeeded")),
            provider_type="echo",
            occurred_at_ms=data.get("at"),
            tx_id=data.get("txId"),
            refs=tuple(data.get("refs", ())),
            link_refs=tuple(data.get("linkRefs", ())),
            payment_status=Status(data["status"]) if data.get("status") else None,
            subscription_status=Status(data["sub"]) if data.get("sub") else None,
            starts_subscription=bool(data.get("starts")),
            subscription_ref=data.get("subRef"),
            attention=data.get("attention"),
            change=data.get("change"),
            amount_minor=data.get("amount"),
            currency=data.get("currency"),
            refund=Refund(data["refund"], data.get("refundOf")) if "refund" in data else None,
            dedup_ids=tuple(data.get("dedupIds", ())),
            follow_ups=tuple(FollowUp(action) for action in data.get("followUps", ())),
        )


ECHO = EchoProvider(
    name="echo",
    kind="card",
    checkout_type="redirect",
    default_label="Echo",
    credential_fields=(CredentialField("secret", secret=True),),
)

CREDENTIALS: dict[str, dict[str, Any]] = {
    "manual": {"mailingAddress": MAILING_ADDRESS},
    "echo": {"secret": "s3cret"},
}


def delivery(
    provider: str = "echo", signature: str = "ok", mode: str = "test", **event: Any
) -> m.Webhook:
    headers = {"x-signature": signature, "x-mode": mode}
    return m.Webhook(provider, headers, json.dumps(event).encode())
