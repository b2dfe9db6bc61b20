"""Signing in or up from another site's page is refused (login CSRF): the JSON endpoints and
the dashboard's forms answer ``403 csrf_failed``, set no cookie and create nothing; the node's
own pages and clients that are not browsers go on working."""

from __future__ import annotations

import pytest

PASSWORD = "a long enough password"
ELSEWHERE = [
    {"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"},
    {"Sec-Fetch-Site": "same-site", "Origin": "https://evil.node.example"},
    {"Origin": "https://evil.example"},  # a browser that sends no Sec-Fetch-Site
    {"Origin": "null"},  # a sandboxed frame
]


async def test_the_json_session_endpoints_refuse_another_sites_post(http, admin):
    await admin.http.post("/api/accounts", json={"email": "v@example.com", "password": PASSWORD})
    for headers in ELSEWHERE:
        login = await http.post(
            "/api/session", json={"email": "v@example.com", "password": PASSWORD}, headers=headers
        )
        assert (login.status_code, login.json()["error"]["code"]) == (403, "csrf_failed"), headers
        assert "set-cookie" not in login.headers
        signup = await http.post(
            "/api/accounts", json={"email": "x@example.com", "password": PASSWORD}, headers=headers
        )
        assert (signup.status_code, signup.json()["error"]["code"]) == (403, "csrf_failed")
    never_made = await http.post(
        "/api/session", json={"email": "x@example.com", "password": PASSWORD}
    )
    assert never_made.status_code == 401
    own = await http.post(
        "/api/session",
        json={"email": "v@example.com", "password": PASSWORD},
        headers={
            "Sec-Fetch-Site": "same-origin",
            "Origin": http.base_url.scheme + "://" + http.base_url.netloc.decode(),
        },
    )
    assert own.status_code == 200  # the node's own page
    assert (
        await http.post("/api/session", json={"email": "v@example.com", "password": PASSWORD})
    ).status_code == 200  # not a browser


@pytest.mark.parametrize("form", ["login", "signup"])
async def test_the_dashboards_forms_refuse_another_sites_post(http, admin, form):
    await admin.http.post("/api/accounts", json={"email": "v@example.com", "password": PASSWORD})
    email = "v@example.com" if form == "login" else "new@example.com"
    for headers in ELSEWHERE:
        forged = await http.post(
            f"/dashboard/{form}", data={"email": email, "password": PASSWORD}, headers=headers
        )
        assert (forged.status_code, forged.json()["error"]["code"]) == (403, "csrf_failed")
        assert "set-cookie" not in forged.headers
    if form == "signup":  # nothing was created
        refused = await http.post("/api/session", json={"email": email, "password": PASSWORD})
        assert refused.status_code == 401
    own = await http.post(
        f"/dashboard/{form}",
        data={"email": email, "password": PASSWORD},
        headers={"Sec-Fetch-Site": "same-origin"},
    )
    assert own.status_code == 303 and "cm_session=" in own.headers["set-cookie"]
