"""``GET /openapi.json`` and ``GET /docs``: the API reference, served from the node's own
document (edge.http.openapi), so what a merchant reads is what this node serves."""

from __future__ import annotations

from pathlib import Path

from quart import Blueprint, Response

from edge.http.assets import answer
from edge.http.openapi.document import document_bytes
from edge.http.openapi.render import render

blueprint = Blueprint("reference", __name__)
STYLE = Path(__file__).resolve().parents[1] / "static" / "docs"

# the document changes only with a release
_CACHE = {"Cache-Control": "public, max-age=300"}


@blueprint.get("/openapi.json")
async def openapi_json() -> Response:
    return Response(
        document_bytes(),
        status=200,
        content_type="application/json",
        headers={**_CACHE, "Access-Control-Allow-Origin": "*"},
    )


@blueprint.get("/static/docs.css")
async def docs_style() -> Response:
    return answer(STYLE, "docs.css", "public, max-age=300")


@blueprint.get("/docs")
async def docs() -> Response:
    return Response(render(), status=200, content_type="text/html; charset=utf-8", headers=_CACHE)
