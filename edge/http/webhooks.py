"""``POST /webhook/{provider}/{projectId}``: the provider's own request, byte for byte.

The handler only carries the raw body and headers to the project's actor, which verifies,
normalizes, deduplicates, applies and stores the event; the answer goes out after the commit.
"""

from __future__ import annotations

from quart import Blueprint, Response, request

from edge.actors.messages import Charge, Webhook
from edge.domain import ids
from edge.domain.providers import CONTRACT_PROVIDERS
from edge.errors import NotFound, project_not_found
from edge.http.context import ask
from edge.http.jsonio import json_response

blueprint = Blueprint("webhooks", __name__)


@blueprint.post("/webhook/<provider>/<project_id>")
async def receive(provider: str, project_id: str) -> Response:
    if provider not in CONTRACT_PROVIDERS:
        raise NotFound("unknown_provider", f"No provider {provider!r}.")
    if not ids.is_project_id(project_id):
        raise project_not_found()
    body = await request.get_data(cache=False)
    headers = {name.lower(): value for name, value in request.headers.items()}
    answer = await ask(
        project_id, Webhook(provider, headers, body, charge=Charge("webhook", provider))
    )
    return json_response(answer)
