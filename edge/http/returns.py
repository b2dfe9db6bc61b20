"""``GET /return/{provider}/{projectId}/{txId}`` and ``.../cancel``: where a provider that
returns the buyer through the node (PayPal) sends them after approval, or when they cancel
(CONTRACT 4.3).

What the node owes the provider (the capture) is durable before the buyer is answered; then the
node waits, a few seconds at most, for the provider's answer to it, so the buyer is told the
outcome: the success address only when the payment went through or is on its way, a page that
says what happened for every failure (declined, canceled, expired), with the way back to the
shop. The page (``edge.http.return_page``) sends the buyer on: in the payment popup the button
opened, the main window goes on and the popup closes itself.
"""

from __future__ import annotations

from pathlib import Path

import trio
from quart import Blueprint, Response, request

from edge.actors.messages import BuyerReturned, Returned
from edge.domain import ids
from edge.errors import NotFound, project_not_found, tx_not_found
from edge.http.assets import answer
from edge.http.clients import charge
from edge.http.context import ask, node
from edge.http.return_page import SHOWN, language, render

blueprint = Blueprint("returns", __name__)

MAX_QUERY_VALUE = 200
# How long a returning buyer waits for the provider's answer to what the return owed: a
# capture takes a second or two; past this the buyer goes on, the capture is retried anyway.
RETURN_WAIT_S = 8.0
STATIC = Path(__file__).resolve().parent.parent / "static" / "return"


@blueprint.get("/return/<provider>/<project_id>/<tx_id>")
async def buyer_returned(provider: str, project_id: str, tx_id: str) -> Response:
    return await _came_back(provider, project_id, tx_id, canceled=False)


@blueprint.get("/return/<provider>/<project_id>/<tx_id>/cancel")
async def buyer_canceled(provider: str, project_id: str, tx_id: str) -> Response:
    return await _came_back(provider, project_id, tx_id, canceled=True)


async def _came_back(provider: str, project_id: str, tx_id: str, *, canceled: bool) -> Response:
    if not ids.is_project_id(project_id):
        raise project_not_found()
    if not ids.is_tx_id(tx_id):
        raise tx_not_found()
    # the provider's own parameters (PayPal: token, PayerID); nothing else is read from them
    query = {
        key: value[:MAX_QUERY_VALUE]
        for key, value in request.args.items()
        if key.isascii() and len(key) <= 40
    }
    view_only = SHOWN in query  # the page again, in the main window: it acts on nothing
    deadline = trio.current_time() + RETURN_WAIT_S
    while True:
        with node().attempts.expecting(tx_id) as attempted:
            message = BuyerReturned(
                provider, tx_id, query, canceled, view_only, charge=charge("public")
            )
            returned: Returned = await ask(project_id, message)
            if not returned.waiting or trio.current_time() >= deadline:
                break
            with trio.move_on_at(deadline):
                await attempted.wait()
            view_only = True  # owed once: asking again only reads the outcome
    lang = language(request.args, request.headers.get("Accept-Language"))
    html = render(returned, tx_id, request.path, lang)
    response = Response(html, status=200, content_type="text/html; charset=utf-8")
    response.headers["Content-Language"] = lang
    response.headers["Vary"] = "Accept-Language"
    response.headers["Cache-Control"] = "no-store"
    response.headers["Referrer-Policy"] = "no-referrer"
    return response


@blueprint.get("/static/return/<name>")
async def static_file(name: str) -> Response:
    """The return page's script and style sheet (the node's CSP runs no inline ones)."""
    if name not in ("return.js", "return.css"):
        raise NotFound("not_found", "No such file.")
    return answer(STATIC, name, "public, max-age=300")
