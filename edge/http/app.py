"""The app factory: blueprints, body limits by route, the error envelope, and the headers every
answer carries (``Cm-Request-Id``, ``Cm-Version``)."""

from __future__ import annotations

from typing import Any

from quart import Response, request
from quart_trio import QuartTrio
from quart_trio.wrappers.request import TrioRequest

from edge.actors.context import NodeContext
from edge.http import (
    button,
    checkout,
    errors,
    manage,
    merchant,
    public,
    subscriptions,
    webhooks,
)
from edge.http.cors import add_cors
from edge.http.jsonio import API_VERSION, check_version
from edge.http.request_ids import request_id
from edge.http.status import StatusEndpoint

JSON_BODY_LIMIT = 16 * 1024
WEBHOOK_BODY_LIMIT = 1024 * 1024
# HTML answers (dashboard, demo pages) run only the node's own files: no inline script or style,
# no framing, no plugins.
HTML_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)


class EdgeRequest(TrioRequest):
    """Chooses the body limit from the path before any byte is read: Quart then refuses a
    declared Content-Length over it at once and stops a streamed body as soon as it passes."""

    def __init__(self, method: str, scheme: str, path: str, *args: Any, **kwargs: Any) -> None:
        limit = WEBHOOK_BODY_LIMIT if path.startswith("/webhook/") else JSON_BODY_LIMIT
        kwargs["max_content_length"] = limit
        super().__init__(method, scheme, path, *args, **kwargs)


def asgi_app(ctx: NodeContext) -> StatusEndpoint:
    """What Hypercorn serves: status polls straight on ASGI, the rest through Quart."""
    return StatusEndpoint(create_app(ctx), ctx)


def create_app(ctx: NodeContext) -> QuartTrio:
    app = QuartTrio("edge")
    app.request_class = EdgeRequest
    app.edge = ctx  # type: ignore[attr-defined]
    app.config["MAX_CONTENT_LENGTH"] = WEBHOOK_BODY_LIMIT
    modules = (public, button, checkout, merchant, manage, webhooks, subscriptions)
    for module in modules:
        app.register_blueprint(module.blueprint)
    errors.install(app)
    app.before_request(_before)
    app.after_request(_after)
    return app


async def _before() -> None:
    check_version(request.headers.get("Cm-Version"))


async def _after(response: Response) -> Response:
    headers = response.headers
    # appended in one go: these names are never set by a handler
    headers.extend(
        (
            ("Cm-Request-Id", request_id()),
            ("Cm-Version", API_VERSION),
            ("X-Content-Type-Options", "nosniff"),
        )
    )
    if (response.content_type or "").startswith("text/html"):  # no header parsing per answer
        headers["Content-Security-Policy"] = HTML_CSP
    extra = getattr(request, "edge_headers", None)
    if extra:
        headers.extend(extra.items())
    add_cors(response)
    return response
