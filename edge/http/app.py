"""What Hypercorn serves: the middleware in front of every path, then the fast routes on raw
ASGI (status polls, webhooks) and the Quart app, one blueprint per concern, for the rest.

The HTML pages of the dashboard are a client of this API: the node passes their blueprints in
(``pages``), so nothing here imports the dashboard and the dashboard imports from here."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import cast

from hypercorn.typing import ASGIFramework
from quart import Blueprint
from quart_trio import QuartTrio

from edge.actors.context import NodeContext
from edge.http import (
    accounts,
    button,
    checkout,
    errors,
    health,
    manage,
    merchant,
    operator_accounts,
    password_change,
    password_reset,
    pay_link,
    public,
    reference,
    returns,
    status,
    subscriptions,
    two_factor,
    webhooks,
)
from edge.http.asgi import ASGIApp, Receive, Scope, Send
from edge.http.middleware import Middleware

JSON_BODY_LIMIT = 16 * 1024


def asgi_app(ctx: NodeContext, pages: Sequence[Blueprint] = ()) -> ASGIFramework:
    return cast(
        ASGIFramework,
        Middleware(
            Router(ctx, create_app(ctx, pages)),
            ctx.settings.body_min_rate,
            ctx.settings.body_grace_s,
            ctx.load,
            ctx.metrics,
            ctx.activity,
            ctx.stalls,
        ),
    )


class Router:
    """Paths under a fast route's prefix go to it, without Quart; the rest (and the lifespan)
    to ``app``."""

    def __init__(self, ctx: NodeContext, app: QuartTrio) -> None:
        self.app = cast(ASGIApp, app)
        self.status = status.StatusRoute(ctx)
        self.webhooks = webhooks.WebhookRoute(ctx)
        self.health = health.HealthRoutes(ctx)
        self.metrics = health.MetricsRoute(ctx)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            path = scope["path"]
            if path.startswith(status.PREFIX):
                await self.status(scope, receive, send)
                return
            if path.startswith(webhooks.PREFIX):
                await self.webhooks(scope, receive, send)
                return
            if path == health.HEALTH or path == health.READY:
                await self.health(scope, receive, send)
                return
            if path == health.METRICS:
                await self.metrics(scope, receive, send)
                return
        await self.app(scope, receive, send)


def served_routes(app: QuartTrio) -> set[tuple[str, str]]:
    """Every (method, path template) the node answers, in the API reference's spelling
    (``{projectId}``): the Quart rules and the fast routes. HEAD and OPTIONS come with GET and
    with CORS, so they are not routes of their own."""
    routes = {*status.ROUTES, *webhooks.ROUTES, *health.ROUTES}
    pages = app.config[PAGES]
    for rule in app.url_map.iter_rules():
        if rule.endpoint.split(".")[0] in pages:
            continue  # HTML pages: a client of the API, not part of it
        template = re.sub(r"<(?:\w+:)?(\w+)>", lambda m: "{" + _camel(m.group(1)) + "}", rule.rule)
        routes.update((method, template) for method in rule.methods or () if method not in _IMPLIED)
    return routes


_IMPLIED = {"HEAD", "OPTIONS"}


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


PAGES = "EDGE_PAGE_BLUEPRINTS"  # app.config: the names of the blueprints that serve HTML pages


def create_app(ctx: NodeContext, pages: Sequence[Blueprint] = ()) -> QuartTrio:
    # no static folder: Quart's would serve every file under edge/static, the button's raw
    # source among them; the icons and the button have routes of their own
    app = QuartTrio("edge", static_folder=None)
    app.edge = ctx  # type: ignore[attr-defined]
    # Quart refuses a declared Content-Length over it at once and stops a streamed body as soon
    # as it passes (webhooks, the one larger body, are a fast route)
    app.config["MAX_CONTENT_LENGTH"] = JSON_BODY_LIMIT
    modules = (
        public,
        button,
        checkout,
        merchant,
        manage,
        subscriptions,
        returns,
        pay_link,
        reference,
        accounts,
        two_factor,
        password_reset,
        password_change,
        operator_accounts,
    )
    for module in modules:
        app.register_blueprint(module.blueprint)
    for page in pages:
        app.register_blueprint(page)
    app.config[PAGES] = frozenset(page.name for page in pages)
    errors.install(app)
    return app
