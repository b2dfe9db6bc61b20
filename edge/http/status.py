"""``GET /status/{projectId}/{id}``: the server-side source of truth for a payment or
subscription. Unknown, malformed and other projects' ids all answer the same 404."""

from __future__ import annotations

from quart import Blueprint, Response, request

from edge.actors.messages import GetStatus
from edge.domain import ids
from edge.failures import Failure
from edge.http.auth import project_caller
from edge.http.clients import charge
from edge.http.context import ask

blueprint = Blueprint("status", __name__)

def _not_found() -> Failure:
    # a new one per answer: a raised exception keeps its traceback, and so everything it saw
    return Failure(404, "not_found", "No transaction or subscription with this id.")


MAX_WAIT_S = 30


def _bounded_int(name: str, low: int, high: int, default: int | None) -> int | None:
    raw = request.args.get(name)
    if raw is None:
        return default
    if not (raw.isascii() and raw.isdigit()) or not low <= int(raw) <= high:
        raise Failure(400, "invalid_request", f"{name} must be an integer from {low} to {high}", field=name)
    return int(raw)


@blueprint.get("/status/<project_id>/<item_id>")
async def status(project_id: str, item_id: str) -> Response:
    if not ids.is_project_id(project_id) or not (ids.is_tx_id(item_id) or ids.is_sub_id(item_id)):
        raise _not_found()
    caller = project_caller(project_id, required=False)
    wait_s, version = 0, None
    if request.query_string:  # most polls carry none: skip parsing
        wait_s = _bounded_int("wait", 0, MAX_WAIT_S, default=0)
        version = _bounded_int("version", 0, 2**31, default=None)
    message = GetStatus(item_id, wait_s=wait_s, version=version, charge=charge("status", caller))
    try:
        record = await ask(project_id, message, timeout_s=wait_s + 10)
    except Failure as failure:
        if failure.code == "project_not_found":
            raise _not_found() from None
        raise
    return Response(record, content_type="application/json")  # rendered JSON, from the actor
