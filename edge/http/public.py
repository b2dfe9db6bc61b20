"""Browser-callable, anonymous: public-info (cached, signed), the signing keys, the provider
icons, and the CORS answers of every endpoint a buyer's browser calls."""

from __future__ import annotations

from pathlib import Path

from quart import Blueprint, Response, request, send_from_directory

from edge.actors.messages import GetPublicInfo
from edge.actors.project import PublicInfo
from edge.domain import ids
from edge.failures import Failure
from edge.http import bodies
from edge.http.clients import charge
from edge.http.context import ask, node
from edge.http.jsonio import json_response
from edge.signing import HEADER as SIGNATURE_HEADER

blueprint = Blueprint("public", __name__)

ICONS = Path(__file__).resolve().parent.parent / "static" / "icons"
PUBLIC_CACHE = "public, max-age=60"
KEYS_CACHE = "public, max-age=3600"

# What the button, or a merchant's own page script, calls from the buyer's browser.
BROWSER_ENDPOINTS = frozenset({"public.public_info", "checkout.start_checkout", "status.status"})
# The button never sends a key: a project key must not reach a browser.
CORS_REQUEST_HEADERS = "Content-Type, Idempotency-Key, Cm-Version"
CORS_EXPOSED_HEADERS = (
    f"{SIGNATURE_HEADER}, ETag, Cm-Request-Id, Cm-Version, Retry-After, "
    "RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset"
)
CORS_MAX_AGE = "600"


@blueprint.get("/api/projects/<project_id>/public-info")
async def public_info(project_id: str) -> Response:
    product_id = request.args.get("productId")
    if product_id is not None and not ids.is_product_id(product_id):
        raise Failure(404, "product_not_found", "No product with this id in this project.", field="productId")
    mode = bodies.mode(request.args.get("mode", "live"))
    if not ids.is_project_id(project_id):
        raise Failure(404, "project_not_found", "No project with this id.")
    info: PublicInfo = await ask(project_id, GetPublicInfo(product_id, mode, charge=charge("public")))
    headers = {
        "ETag": info.etag,
        "Cache-Control": PUBLIC_CACHE,
        # On the 304 too: a cache merges its headers into the stored answer.
        SIGNATURE_HEADER: node().signer.sign_once(info.etag, info.body),
    }
    if info.etag in _etags(request.headers.get("If-None-Match", "")):
        return Response(b"", status=304, headers=headers)
    return Response(info.body, status=200, content_type="application/json", headers=headers)


def _etags(header: str) -> set[str]:
    return {part.strip() for part in header.split(",") if part.strip()}


@blueprint.get("/.well-known/cm-signing-keys")
async def signing_keys() -> Response:
    return json_response(
        node().signer.jwks(),
        headers={"Cache-Control": KEYS_CACHE, "Access-Control-Allow-Origin": "*"},
    )


@blueprint.get("/static/icons/<name>")
async def icon(name: str) -> Response:
    if not name.endswith(".svg") or "/" in name:
        raise Failure(404, "not_found", "No such icon.")
    response = await send_from_directory(ICONS, name)
    response.headers["Cache-Control"] = "public, max-age=86400"
    return response


@blueprint.after_app_request
async def _cors(response: Response) -> Response:
    """Lets a page on any origin call the browser endpoints and read the headers it needs (the
    signature above all). Quart answers OPTIONS itself with the route's ``Allow``; a preflight
    turns that into the methods the browser may use."""
    rule = request.url_rule
    if rule is None or rule.endpoint not in BROWSER_ENDPOINTS:
        return response
    headers = response.headers
    headers["Access-Control-Allow-Origin"] = "*"
    headers["Access-Control-Expose-Headers"] = CORS_EXPOSED_HEADERS
    if request.method == "OPTIONS" and "Access-Control-Request-Method" in request.headers:
        headers["Access-Control-Allow-Methods"] = headers.get("Allow", "")
        headers["Access-Control-Allow-Headers"] = CORS_REQUEST_HEADERS
        headers["Access-Control-Max-Age"] = CORS_MAX_AGE
    return response
