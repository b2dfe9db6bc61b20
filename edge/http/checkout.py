"""``POST /api/checkout/{provider}/{projectId}``: start a checkout; no key needed (the button
calls it from the buyer's browser), a key gets its own limits and a test key forces test mode."""

from __future__ import annotations

from quart import Blueprint, Response

from edge.actors.messages import StartCheckout
from edge.domain import ids
from edge.failures import Failure
from edge.http import bodies
from edge.http.auth import project_caller
from edge.http.context import ask
from edge.http.jsonio import json_response, read_json_object
from edge.providers.registry import CONTRACT_PROVIDERS

blueprint = Blueprint("checkout", __name__)


@blueprint.post("/api/checkout/<provider>/<project_id>")
async def start_checkout(provider: str, project_id: str) -> Response:
    if provider not in CONTRACT_PROVIDERS:
        raise Failure(
            404,
            "unknown_provider",
            f"No provider {provider!r}; use one of {', '.join(CONTRACT_PROVIDERS)}.",
        )
    if not ids.is_project_id(project_id):
        raise Failure(404, "project_not_found", "No project with this id.")
    caller = project_caller(project_id, required=False)
    fields = bodies.checkout(await read_json_object())
    if caller is not None and caller.mode == "test":
        fields["mode"] = "test"
    answer = await ask(project_id, StartCheckout(provider=provider, **fields))
    return json_response(answer, 201)
