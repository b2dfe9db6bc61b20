"""``GET /status/{projectId}/{id}``: the server-side source of truth for a payment or
subscription. Unknown, malformed and other projects' ids all answer the same 404."""

from __future__ import annotations

from quart import Blueprint, Response

from edge.actors.messages import GetStatus
from edge.domain import ids
from edge.failures import Failure
from edge.http.auth import project_caller
from edge.http.context import ask
from edge.http.jsonio import json_response

blueprint = Blueprint("status", __name__)

_NOT_FOUND = Failure(404, "not_found", "No transaction or subscription with this id.")


@blueprint.get("/status/<project_id>/<item_id>")
async def status(project_id: str, item_id: str) -> Response:
    if not ids.is_project_id(project_id) or not (ids.is_tx_id(item_id) or ids.is_sub_id(item_id)):
        raise _NOT_FOUND
    project_caller(project_id, required=False)
    try:
        record = await ask(project_id, GetStatus(item_id))
    except Failure as failure:
        if failure.code == "project_not_found":
            raise _NOT_FOUND from None
        raise
    return json_response(record)
