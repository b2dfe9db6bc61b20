"""``POST /api/subscriptions/{projectId}/{subscriptionId}/portal-url``: a provider-hosted page
where the buyer manages the subscription. Never anonymous: it needs the project's key."""

from __future__ import annotations

from quart import Blueprint, Response

from edge.actors.messages import PortalUrl
from edge.domain import ids
from edge.errors import InvalidRequest, NotFound, check_project_id
from edge.http.auth import project_caller
from edge.http.context import ask
from edge.http.jsonio import json_response, read_json_object

blueprint = Blueprint("subscriptions", __name__)


@blueprint.post("/api/subscriptions/<project_id>/<subscription_id>/portal-url")
async def portal_url(project_id: str, subscription_id: str) -> Response:
    check_project_id(project_id)
    caller = await project_caller(project_id, required=True, sessions=True)
    assert caller is not None
    body = await read_json_object(optional=True)
    unknown = set(body) - {"returnUrl"}
    if unknown:
        raise InvalidRequest(
            "unknown_field", f"unknown field {sorted(unknown)[0]!r}", field=sorted(unknown)[0]
        )
    return_url = body.get("returnUrl")
    if return_url is not None and not isinstance(return_url, str):
        raise InvalidRequest("invalid_request", "returnUrl must be a string", field="returnUrl")
    if not ids.is_sub_id(subscription_id):
        raise NotFound("not_found", "No subscription with this id in this project.")
    answer = await ask(project_id, PortalUrl(subscription_id, caller.mode, return_url))
    return json_response(answer, headers={"Cache-Control": "no-store"})
