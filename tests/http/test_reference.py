"""``/openapi.json`` and ``/docs`` as the node serves them, and nothing else from the package's
static files."""

from __future__ import annotations

import re
from pathlib import Path

from edge.http.middleware import HTML_CSP
from edge.http.openapi.document import document

CHECKED_IN = Path(__file__).resolve().parents[2] / "docs" / "openapi.json"


async def test_the_node_serves_the_checked_in_document(http):
    answer = await http.get("/openapi.json")
    assert answer.status_code == 200
    assert answer.headers["content-type"] == "application/json"
    assert answer.content == CHECKED_IN.read_bytes()


async def test_docs_is_html_without_script_under_the_strict_csp(http):
    answer = await http.get("/docs")
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/html")
    assert answer.headers["content-security-policy"] == HTML_CSP
    page = answer.text
    assert "<script" not in page and "<style" not in page and "style=" not in page
    assert " src=" not in page  # nothing run or loaded from anywhere, but its own style sheet
    assert re.findall(r"<link[^>]*>", page) == ['<link rel="stylesheet" href="/static/docs.css">']
    style = await http.get("/static/docs.css")
    assert style.status_code == 200 and style.headers["content-type"].startswith("text/css")
    assert "@media (max-width" in style.text  # a phone gets its own layout
    for path, item in document()["paths"].items():
        for method in item:
            assert f"{method.upper()} {path}" in page, (method, path)
    for code in ("tx_exists", "invalid_transition", "signature_invalid", "quota_exceeded"):
        assert code in page


async def test_the_package_files_are_not_served_raw(http, envelope):
    """Quart's default static route served edge/static, the button's source among them."""
    answer = await http.get("/static/button/cm-button.js")
    envelope(answer, 404, "not_found")
    assert (await http.get("/static/icons/card.svg")).status_code == 200
