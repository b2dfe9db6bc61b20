"""The node's own small files, served from memory (edge/http/assets.py): the icons, the return
page's and the dashboard's script and style sheet, each with its type and ETag, a 304 when the
browser has it, and nothing outside their folders."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize(
    ("path", "kind", "cache"),
    [
        ("/static/icons/card.svg", "image/svg+xml", "public, max-age=86400"),
        ("/static/return/return.js", "text/javascript; charset=utf-8", "public, max-age=300"),
        ("/static/return/return.css", "text/css; charset=utf-8", "public, max-age=300"),
        ("/dashboard/static/dashboard.css", "text/css; charset=utf-8", "no-store"),
        ("/dashboard/static/dashboard.js", "text/javascript; charset=utf-8", "no-store"),
    ],
)
async def test_a_file_comes_with_its_type_and_etag_and_is_not_sent_twice(
    http, path, kind, cache
) -> None:
    first = await http.get(path)
    assert first.status_code == 200 and first.content
    assert (first.headers["content-type"], first.headers["cache-control"]) == (kind, cache)
    etag = first.headers["etag"]
    again = await http.get(path, headers={"If-None-Match": f'"other", {etag}'})
    assert (again.status_code, again.content, again.headers["etag"]) == (304, b"", etag)
    # nothing a cache would merge into the file it kept: its type stays a script's or a style's
    assert not {"content-type", "content-length", "content-security-policy"} & set(again.headers)
    changed = await http.get(path, headers={"If-None-Match": '"other"'})
    assert changed.status_code == 200 and changed.content == first.content


@pytest.mark.parametrize(
    "path",
    [
        "/static/icons/nope.svg",
        "/static/icons/card.png",
        "/static/icons/..%2Fbutton%2Fcm-button.js",
        "/dashboard/static/..%2Ftemplates%2Fbase.html",
        "/dashboard/static/.hidden.css",
        "/dashboard/static/missing.js",
        "/static/return/other.js",
    ],
)
async def test_nothing_else_is_served(http, path) -> None:
    answer = await http.get(path)
    assert answer.status_code == 404, path
    assert answer.json()["error"]["code"] == "not_found"
