"""Browser-callable, anonymous: public-info (cached, signed), the signing keys and the provider
icons."""

from __future__ import annotations

from pathlib import Path

from quart import Blueprint, Response, request

from edge.actors.messages import GetPublicInfo
from edge.actors.project import PublicInfo
from edge.domain import ids
from edge.errors import NotFound, check_project_id
from edge.http import bodies
from edge.http.assets import answer, etags, not_modified
from edge.http.clients import charge
from edge.http.context import ask, node
from edge.http.jsonio import json_response
from edge.signing import HEADER as SIGNATURE_HEADER

blueprint = Blueprint("public", __name__)

ICONS = Path(__file__).resolve().parent.parent / "static" / "icons"
PUBLIC_CACHE = "public, max-age=60"
KEYS_CACHE = "public, max-age=3600"


@blueprint.get("/api/projects/<project_id>/public-info")
async def public_info(project_id: str) -> Response:
    product_id = request.args.get("productId")
    if product_id is not None and not ids.is_product_id(product_id):
        raise NotFound(
            "product_not_found", "No product with this id in this project.", field="productId"
        )
    mode = bodies.mode(request.args.get("mode", "live"))
    check_project_id(project_id)
    info: PublicInfo = await ask(
        project_id, GetPublicInfo(product_id, mode, charge=charge("public"))
    )
    headers = {
        "ETag": info.etag,
        "Cache-Control": PUBLIC_CACHE,
        # On the 304 too: a cache merges its headers into the stored answer.
        SIGNATURE_HEADER: node().signer.sign_once(info.etag, info.body),
    }
    if info.etag in etags(request.headers.get("If-None-Match", "")):
        return not_modified(headers)
    return Response(info.body, status=200, content_type="application/json", headers=headers)


@blueprint.get("/.well-known/cm-signing-keys")
async def signing_keys() -> Response:
    return json_response(
        node().signer.jwks(),
        headers={"Cache-Control": KEYS_CACHE, "Access-Control-Allow-Origin": "*"},
    )


@blueprint.get("/static/icons/<name>")
async def icon(name: str) -> Response:
    if not name.endswith(".svg") or "/" in name:
        raise NotFound("not_found", "No such icon.")
    return answer(ICONS, name, "public, max-age=86400")
