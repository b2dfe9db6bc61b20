"""``POST /api/checkout/{provider}/{projectId}``: start a checkout; no key needed (the button
calls it from the buyer's browser), a key gets its own limits and a test key forces test mode."""

from __future__ import annotations

import hashlib
import re

from quart import Blueprint, Response, request

from edge.actors.messages import StartCheckout
from edge.errors import InvalidRequest, NotFound, check_project_id
from edge.http import bodies
from edge.http.auth import project_caller
from edge.http.clients import charge
from edge.http.context import ask
from edge.http.jsonio import dumps, json_response, read_json_object
from edge.providers.registry import PROVIDERS

blueprint = Blueprint("checkout", __name__)

MAX_IDEMPOTENCY_KEY = 255
# visible ASCII only: a key is compared byte for byte, and a space or a character a proxy may
# re-encode would make two retries of one request look like two requests
_IDEMPOTENCY_KEY = re.compile(rf"[!-~]{{1,{MAX_IDEMPOTENCY_KEY}}}")


@blueprint.post("/api/checkout/<provider>/<project_id>")
async def start_checkout(provider: str, project_id: str) -> Response:
    if provider not in PROVIDERS:
        raise NotFound(
            "unknown_provider", f"No provider {provider!r}; use one of {', '.join(PROVIDERS)}."
        )
    check_project_id(project_id)
    caller = await project_caller(project_id, required=False)
    idempotency_key = request.headers.get("Idempotency-Key")
    if idempotency_key is not None and not _IDEMPOTENCY_KEY.fullmatch(idempotency_key):
        raise InvalidRequest(
            "invalid_request",
            "Idempotency-Key must be 1 to 255 visible ASCII characters (no spaces).",
            field="Idempotency-Key",
        )
    fields = bodies.checkout(await read_json_object())
    if caller is not None and caller.mode == "test":
        fields["mode"] = "test"
    message = StartCheckout(
        provider=provider,
        idempotency_key=idempotency_key,
        # the same request is the same parsed body, whatever its spacing or key order
        body_hash=hashlib.sha256(
            dumps({"provider": provider, **fields}, sort_keys=True)
        ).hexdigest(),
        charge=charge("checkout", caller),
        **fields,
    )
    answer = await ask(project_id, message)
    return json_response(answer, 201)
