"""``POST /api/checkout/{provider}/{projectId}``: start a checkout; no key needed (the button
calls it from the buyer's browser), a key gets its own limits and a test key forces test mode."""

from __future__ import annotations

from quart import Blueprint, Response

from edge.actors.messages import StartCheckout
from edge.errors import NotFound, check_project_id
from edge.http import bodies, idempotency
from edge.http.auth import project_caller
from edge.http.clients import charge
from edge.http.context import ask
from edge.http.jsonio import json_response, read_json_object
from edge.providers.registry import PROVIDERS

blueprint = Blueprint("checkout", __name__)


@blueprint.post("/api/checkout/<provider>/<project_id>")
async def start_checkout(provider: str, project_id: str) -> Response:
    if provider not in PROVIDERS:
        raise NotFound(
            "unknown_provider", f"No provider {provider!r}; use one of {', '.join(PROVIDERS)}."
        )
    check_project_id(project_id)
    caller = await project_caller(project_id, required=False)
    idempotency_key = idempotency.key()
    fields = bodies.checkout(await read_json_object())
    if caller is not None and caller.mode == "test":
        fields["mode"] = "test"
    message = StartCheckout(
        provider=provider,
        idempotency_key=idempotency_key,
        body_hash=idempotency.body_hash({"provider": provider, **fields}),
        charge=charge("checkout", caller),
        **fields,
    )
    answer = await ask(project_id, message)
    return json_response(answer, 201)
