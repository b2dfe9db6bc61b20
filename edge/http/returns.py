"""``GET /return/{provider}/{projectId}/{txId}``: where a provider that returns the buyer
through the node (PayPal) sends them after approval (CONTRACT 4.3). What the node owes the
provider (the capture) is durable before the buyer is sent on, with a 303, to the success
address (or the cancel address when the checkout has ended meanwhile)."""

from __future__ import annotations

from quart import Blueprint, Response, request

from edge.actors.messages import BuyerReturned
from edge.domain import ids
from edge.errors import NotFound, project_not_found
from edge.http.clients import charge
from edge.http.context import ask

blueprint = Blueprint("returns", __name__)

MAX_QUERY_VALUE = 200


@blueprint.get("/return/<provider>/<project_id>/<tx_id>")
async def buyer_returned(provider: str, project_id: str, tx_id: str) -> Response:
    if not ids.is_project_id(project_id):
        raise project_not_found()
    if not ids.is_tx_id(tx_id):
        raise NotFound("not_found", "No transaction with this id in this project.")
    # the provider's own parameters (PayPal: token, PayerID); nothing else is read from them
    query = {
        key: value[:MAX_QUERY_VALUE]
        for key, value in request.args.items()
        if key.isascii() and len(key) <= 40
    }
    message = BuyerReturned(provider, tx_id, query, charge=charge("public"))
    where: str = await ask(project_id, message)
    response = Response(b"", status=303, headers={"Location": where})
    response.headers["Cache-Control"] = "no-store"
    response.headers["Referrer-Policy"] = "no-referrer"
    return response
