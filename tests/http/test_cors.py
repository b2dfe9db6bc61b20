"""edge.http.cors: which answers carry CORS headers (CONTRACT 4.1: public-info always; the
browser endpoints only to a browser)."""

from __future__ import annotations

from support.client import bearer, manual_shop

from edge.http import cors


def test_browser_paths_only_with_an_origin_and_public_info_always():
    assert cors.applies("/status/p/t", origin=True)
    assert cors.applies("/api/checkout/stripe/p", origin=True)
    assert not cors.applies("/status/p/t", origin=False)
    assert not cors.applies("/api/projects/p/transactions", origin=True)
    assert not cors.applies("/webhook/stripe/p", origin=True)
    assert cors.applies("/api/projects/p/public-info", origin=False)


def test_a_preflight_allows_what_the_route_allows():
    names = dict(cors.headers([(b"allow", b"OPTIONS, POST")], preflight=True))
    assert names[b"access-control-allow-methods"] == b"OPTIONS, POST"
    assert b"access-control-max-age" in names
    assert b"access-control-allow-methods" not in dict(cors.headers([], preflight=False))


async def test_only_browser_endpoints_answer_cross_origin(admin, http):
    shop = await manual_shop(admin)
    merchant = await http.get(
        f"/api/projects/{shop.project_id}/transactions",
        headers={**bearer(shop.live_key), "Origin": "https://shop.example"},
    )
    assert merchant.status_code == 200 and "access-control-allow-origin" not in merchant.headers
    path = f"/status/{shop.project_id}/tx_01M7YS2H2CXEBWK64PPXXP5WHD"
    from_a_page = await http.get(path, headers={"Origin": "https://shop.example"})
    assert (
        from_a_page.status_code == 404 and from_a_page.headers["access-control-allow-origin"] == "*"
    )
    assert "Cm-Signature" in from_a_page.headers["access-control-expose-headers"]
    from_a_server = await http.get(path)  # a backend poll carries no CORS headers
    assert "access-control-allow-origin" not in from_a_server.headers
    # public-info always does: shared caches keep it and hand it to browsers later
    info = await http.get(f"/api/projects/{shop.project_id}/public-info")
    assert info.headers["access-control-allow-origin"] == "*"


async def test_checkout_preflight_from_a_page(admin, http):
    shop = await manual_shop(admin)
    preflight = await http.options(
        f"/api/checkout/manual/{shop.project_id}",
        headers={"Origin": "https://shop.example", "Access-Control-Request-Method": "POST"},
    )
    assert preflight.status_code == 200
    assert preflight.headers["access-control-allow-origin"] == "*"
    assert "POST" in preflight.headers["access-control-allow-methods"]
    assert "Idempotency-Key" in preflight.headers["access-control-allow-headers"]
