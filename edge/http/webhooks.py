"""``POST /webhook/{provider}/{projectId}``: the provider's own request, byte for byte, served
directly on ASGI beside the Quart app (edge.http.middleware in front).

The route carries the raw body and headers to the project's actor and checks the provider's
signature in its own task with what the actor hands it (``edge.actors.deliveries``); the actor
normalizes, deduplicates, applies and stores the verified event; the answer goes out after the
commit.
Why not a Quart route: ingest speed is the webhook's whole job, and Quart's request object,
routing and body wrapper cost more per delivery than reading one body off ASGI.
"""

from __future__ import annotations

from edge.actors.context import NodeContext
from edge.actors.deliveries import deliver
from edge.actors.messages import Charge, Webhook
from edge.errors import NotFound, check_project_id
from edge.http.asgi import Receive, Scope, Send, answer, encode, read_body
from edge.http.errors import method_not_allowed, no_such_endpoint
from edge.http.jsonio import dumps
from edge.providers.registry import PROVIDERS

PREFIX = "/webhook/"
ROUTES = (("POST", "/webhook/{provider}/{projectId}"),)
BODY_LIMIT = 1024 * 1024
ALLOW = "OPTIONS, POST"
_ALLOW = ((b"allow", ALLOW.encode()),)


class WebhookRoute:
    """The raw ASGI route for paths under ``/webhook/``."""

    def __init__(self, ctx: NodeContext) -> None:
        self.ctx = ctx

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        provider, _, project_id = scope["path"][len(PREFIX) :].partition("/")
        if not provider or not project_id or "/" in project_id:
            raise no_such_endpoint()
        method = scope["method"]
        if method == "OPTIONS":
            await answer(send, 200, b"", _ALLOW)
            return
        if method != "POST":
            raise method_not_allowed(ALLOW)
        if provider not in PROVIDERS:
            raise NotFound("unknown_provider", f"No provider {provider!r}.")
        check_project_id(project_id)
        # the last of repeated lines, as the Quart route read them
        headers = {
            name.decode("latin-1"): value.decode("latin-1") for name, value in scope["headers"]
        }
        body = await read_body(receive, headers.get("content-length"), BODY_LIMIT)
        delivery = Webhook(provider, headers, body, charge=Charge("webhook", provider))
        reply = await deliver(self.ctx.registry, self.ctx.http, project_id, delivery)
        await answer(send, 200, dumps(reply.value), encode(reply.headers))
