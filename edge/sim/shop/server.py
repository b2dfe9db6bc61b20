"""The demo shop's server. Pages are static files filled with the node's address, the project
and the button snippet; everything dynamic happens in the buyer's browser against the node."""

from __future__ import annotations

import json
from collections.abc import Mapping
from html import escape
from pathlib import Path

from quart import Response
from quart_trio import QuartTrio

from edge.sim.loopback import LoopbackServer

STATIC = Path(__file__).resolve().parent
CSP = (
    "default-src 'self'; script-src 'self' {node}; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' {node} data:; connect-src {node}; form-action 'self' {node}; "
    "base-uri 'none'; object-src 'none'; frame-ancestors 'none'"
)


class DemoShop(LoopbackServer):
    def __init__(
        self,
        node_url: str,
        project_id: str,
        script_tag: str,
        card_forms: Mapping[str, str] | None = None,
    ) -> None:
        """``card_forms``: per provider, the address of its hosted card form for a ``token``
        checkout (``{token}`` in it), which the shop's ``cardForm`` hook opens."""
        self.node_url = node_url
        self.project_id = project_id
        self.script_tag = script_tag
        self.card_forms = dict(card_forms or {})
        super().__init__(self._build_app())

    def _page(self, name: str) -> Response:
        html = (STATIC / name).read_text()
        for marker, value in {
            "{{node}}": escape(self.node_url),
            "{{project}}": escape(self.project_id),
            "{{card_forms}}": escape(json.dumps(self.card_forms)),
            "{{button_script}}": self.script_tag,
        }.items():
            html = html.replace(marker, value)
        return Response(
            html,
            content_type="text/html; charset=utf-8",
            headers={"Content-Security-Policy": CSP.format(node=self.node_url)},
        )

    def _build_app(self) -> QuartTrio:
        app = QuartTrio("edge-demo-shop")

        @app.get("/")
        async def index() -> Response:
            return self._page("index.html")

        @app.get("/thanks")
        async def thanks() -> Response:
            return self._page("thanks.html")

        @app.get("/shop.js")
        async def script() -> Response:
            return Response(
                (STATIC / "shop.js").read_text(), content_type="text/javascript; charset=utf-8"
            )

        return app
