"""The node's side of the button, on a real node: signed public-info (also on the 304 path and
across restarts), the published keys, CORS preflights, and the served script with its SRI hash."""

from __future__ import annotations

import base64
import hashlib
import json
from functools import partial

import httpx
import trio
from support.client import Admin, manual_shop
from support.nodes import node_settings
from test_signing import verify_with_jwks

from edge.http import button
from edge.node import RunningNode, run_node


async def _public_info(http: httpx.AsyncClient, project_id: str, **headers: str) -> httpx.Response:
    return await http.get(
        f"/api/projects/{project_id}/public-info", params={"productId": "book"}, headers=headers
    )


async def test_public_info_is_signed_over_its_exact_bytes(admin, http):
    shop = await manual_shop(admin)
    answer = await _public_info(http, shop.project_id)
    keys = (await http.get("/.well-known/cm-signing-keys")).json()
    verify_with_jwks(keys, answer.headers["cm-signature"], answer.content)


async def test_304_and_repeated_answers_carry_the_same_signature(admin, http):
    shop = await manual_shop(admin)
    first = await _public_info(http, shop.project_id)
    again = await _public_info(http, shop.project_id)
    revalidated = await _public_info(
        http, shop.project_id, **{"If-None-Match": first.headers["etag"]}
    )
    assert revalidated.status_code == 304 and revalidated.content == b""
    # a cache merges these headers into the JSON it kept: nothing there may call it HTML
    assert "content-type" not in revalidated.headers
    assert "content-security-policy" not in revalidated.headers
    assert "content-length" not in revalidated.headers  # the stored body's is not 0
    assert (
        again.headers["cm-signature"]
        == revalidated.headers["cm-signature"]
        == first.headers["cm-signature"]
    )
    # A cache that keeps the 200's body and takes the 304's headers still holds a valid pair.
    keys = (await http.get("/.well-known/cm-signing-keys")).json()
    verify_with_jwks(keys, revalidated.headers["cm-signature"], first.content)


async def test_a_configuration_change_is_signed_afresh(admin, http):
    shop = await manual_shop(admin)
    before = await _public_info(http, shop.project_id)
    await admin.product(shop.project_id, amount=25)
    after = await _public_info(http, shop.project_id)
    assert after.content != before.content
    keys = (await http.get("/.well-known/cm-signing-keys")).json()
    verify_with_jwks(keys, after.headers["cm-signature"], after.content)


async def test_signing_key_and_script_survive_a_restart(tmp_path):
    async def keys_and_script() -> tuple[dict, str]:
        async with trio.open_nursery() as nursery:
            running: RunningNode = await nursery.start(
                partial(run_node, node_settings(tmp_path / "data"))
            )
            async with httpx.AsyncClient(base_url=running.url) as http:
                keys = (await http.get("/.well-known/cm-signing-keys")).json()
                location = (await http.get("/button.js")).headers["location"]
            running.stop.set()
        return keys, location

    assert await keys_and_script() == await keys_and_script()


async def test_signing_keys_are_public_and_cacheable(http):
    answer = await http.get("/.well-known/cm-signing-keys")
    assert answer.status_code == 200
    assert answer.headers["access-control-allow-origin"] == "*"
    assert answer.headers["cache-control"] == "public, max-age=3600"
    [key] = answer.json()["keys"]
    assert set(key) == {"kty", "crv", "x", "y", "kid", "alg", "use"}


async def _preflight(http: httpx.AsyncClient, path: str, method: str) -> httpx.Response:
    return await http.options(
        path,
        headers={
            "Origin": "https://shop.example",
            "Access-Control-Request-Method": method,
            "Access-Control-Request-Headers": "content-type",
        },
    )


async def test_browser_endpoints_answer_cors_preflights(admin, http):
    shop = await manual_shop(admin)
    pid = shop.project_id
    for path, method in [
        (f"/api/projects/{pid}/public-info", "GET"),
        (f"/api/checkout/manual/{pid}", "POST"),
        (f"/status/{pid}/tx_01JD0000000000000000000000", "GET"),
    ]:
        answer = await _preflight(http, path, method)
        assert answer.status_code == 200, (path, answer.text)
        headers = answer.headers
        assert headers["access-control-allow-origin"] == "*"
        assert method in headers["access-control-allow-methods"]
        allowed = {h.strip() for h in headers["access-control-allow-headers"].split(",")}
        assert {"Content-Type", "Idempotency-Key", "Cm-Version"} <= allowed
        assert "Authorization" not in allowed  # a project key never belongs in a browser
        assert headers["access-control-max-age"] == "600"
        assert "cm-request-id" in headers


async def test_browser_answers_expose_the_headers_a_page_reads(admin, http):
    shop = await manual_shop(admin)
    answer = await _public_info(http, shop.project_id, Origin="https://shop.example")
    exposed = {
        h.strip().lower() for h in answer.headers["access-control-expose-headers"].split(",")
    }
    assert {"cm-signature", "etag", "cm-request-id"} <= exposed
    missing = await http.post(
        f"/api/checkout/manual/{shop.project_id}",
        json={"productId": "nope"},
        headers={"Origin": "https://shop.example"},
    )
    assert missing.headers["access-control-allow-origin"] == "*"
    assert "Cm-Request-Id" in missing.headers["access-control-expose-headers"]


async def test_button_js_points_at_the_current_version(node, http):
    current = await http.get("/button.js")
    assert current.status_code == 302
    assert current.headers["cache-control"] == "public, max-age=300"
    assert current.headers["access-control-allow-origin"] == "*"
    assert current.headers["location"] == button.current(node.ctx.signer).path
    assert current.headers["location"].startswith("/button/v1-")


async def test_versioned_script_is_immutable_and_matches_its_sri_hash(node, http):
    script = await http.get("/button.js", follow_redirects=True)
    assert script.status_code == 200
    assert script.headers["content-type"] == "text/javascript; charset=utf-8"
    assert script.headers["cache-control"] == "public, max-age=31536000, immutable"
    assert script.headers["access-control-allow-origin"] == "*"
    digest = base64.b64encode(hashlib.sha384(script.content).digest()).decode()
    assert button.sri_hash(node.ctx.signer) == f"sha384-{digest}"
    assert script.content == button.script_bytes(node.ctx.signer)
    gone = await http.get("/button/v1-0000000000000000.js")
    assert gone.status_code == 404 and gone.json()["error"]["code"] == "not_found"


async def test_script_carries_the_published_key(node, http):
    script = (await http.get("/button.js", follow_redirects=True)).text
    [key] = (await http.get("/.well-known/cm-signing-keys")).json()["keys"]
    built_in = json.dumps(
        [{"kid": key["kid"], "kty": "EC", "crv": "P-256", "x": key["x"], "y": key["y"]}],
        separators=(",", ":"),
    )
    assert f"const SIGNING_KEYS = {built_in};" in script
    assert button.KEYS_MARKER not in script


async def test_snippet_names_the_script_and_its_hash(node):
    html = button.snippet(
        node.ctx.signer, node.url, "prj_abc", "book", customer_ref='u"1', mode="test"
    )
    assert html.startswith(
        '<cm-button project="prj_abc" product="book" customer-ref="u&quot;1" mode="test">'
    )
    assert f'src="{node.url}/button.js" integrity="{button.sri_hash(node.ctx.signer)}"' in html
    assert 'crossorigin="anonymous"' in html


async def test_admin_unaffected_by_cors(admin: Admin):
    # Management answers stay same-origin: no CORS headers leak onto them.
    response = await admin.http.get("/api/manage/projects/" + await admin.project())
    assert "access-control-allow-origin" not in response.headers
