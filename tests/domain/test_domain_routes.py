"""Request paths as route templates for metrics (edge.domain.routes): ids and names never
become labels of their own."""

from __future__ import annotations

import pytest

from edge.domain.routes import route_of


@pytest.mark.parametrize(
    ("path", "route"),
    [
        ("/status/prj_abc123/tx_01JD0000000000000000000000", "/status/{id}/{id}"),
        ("/api/manage/projects/prj_abc123/products/book", "/api/manage/projects/{id}/products/{x}"),
        ("/webhook/btcpay/prj_abc123", "/webhook/btcpay/{id}"),
        ("/dashboard/p/prj_abc123/methods", "/dashboard/p/{id}/methods"),
        ("/api/session", "/api/session"),
        ("/openapi.json", "/openapi.json"),
        ("/anything/else", "/{x}/{x}"),
    ],
)
def test_paths_become_few_routes(path, route):
    assert route_of(path) == route
