"""The management API: generic provider config, write-only secrets, keys, products."""

from __future__ import annotations

import json

from support.client import MAILING_ADDRESS, bearer, manual_shop
from support.waits import bound


async def test_operator_token_is_required(http, admin):
    shop = await manual_shop(admin)
    response = await http.post("/api/manage/projects", json={"name": "x"})
    assert (response.status_code, response.json()["error"]["code"]) == (401, "unauthorized")
    response = await http.get(f"/api/manage/projects/{shop.project_id}", headers=bearer("nope"))
    assert response.status_code == 401
    response = await http.get(
        f"/api/manage/projects/{shop.project_id}", headers=bearer(shop.live_key)
    )
    assert (response.status_code, response.json()["error"]["code"]) == (403, "forbidden")


async def test_project_validation(admin):
    bad = await admin.http.post(
        "/api/manage/projects",
        json={"name": "x", "successUrl": "ftp://x", "cancelUrl": "https://a"},
    )
    assert (bad.status_code, bad.json()["error"]["field"]) == (400, "successUrl")
    bad = await admin.http.post(
        "/api/manage/projects",
        json={
            "name": "x",
            "successUrl": "https://a/",
            "cancelUrl": "https://a/",
            "allowedOrigins": ["not a url"],
        },
    )
    assert bad.status_code == 400
    bad = await admin.http.post(
        "/api/manage/projects",
        json={"name": "x", "successUrl": "https://a/", "cancelUrl": "https://a/", "tier": "gold"},
    )
    assert (bad.status_code, bad.json()["error"]["field"]) == (400, "tier")
    pid = await admin.project()
    patched = await admin.ok("PATCH", f"/api/manage/projects/{pid}", {"name": "Renamed"})
    assert patched["name"] == "Renamed" and patched["tier"] == "free"
    # the project's own redirect addresses obey the per-call rules, on POST and on PATCH
    for url in ("http://evil.example/", "https://user@shop.example/x", "https://a b.example/"):
        created = await admin.http.post(
            "/api/manage/projects",
            json={
                "name": "x",
                "successUrl": url,
                "cancelUrl": "https://shop.example/cart",
                "allowedOrigins": ["https://shop.example"],
            },
        )
        assert (created.status_code, created.json()["error"]["code"]) == (400, "url_not_allowed")
        assert created.json()["error"]["field"] == "successUrl"
        before = await admin.ok("GET", f"/api/manage/projects/{pid}")
        refused = await admin.http.patch(f"/api/manage/projects/{pid}", json={"cancelUrl": url})
        assert (refused.status_code, refused.json()["error"]["field"]) == (400, "cancelUrl")
        assert await admin.ok("GET", f"/api/manage/projects/{pid}") == before
    # the origins of the project's own addresses are allowed origins: the merchant named them
    moved = await admin.ok(
        "PATCH", f"/api/manage/projects/{pid}", {"successUrl": "https://other.example/thanks"}
    )
    assert moved["allowedOrigins"] == ["https://shop.example", "https://other.example"]
    narrowed = await admin.ok(
        "PATCH", f"/api/manage/projects/{pid}", {"allowedOrigins": ["https://elsewhere.example"]}
    )
    assert narrowed["allowedOrigins"] == [
        "https://elsewhere.example",
        "https://other.example",
        "https://shop.example",
    ]
    made = await admin.ok(
        "POST",
        "/api/manage/projects",
        {"name": "y", "successUrl": "https://y.example/ok", "cancelUrl": "http://localhost:3000/"},
        201,
    )
    assert made["allowedOrigins"] == ["https://y.example", "http://localhost:3000"]
    response = await admin.http.get("/api/manage/projects/prj_0000000000000000")
    assert response.status_code == 404
    assert (await admin.http.get(f"/api/manage/projects/{pid}")).headers[
        "cache-control"
    ] == "no-store"


async def test_products_and_overrides_show_in_public_info_at_once(admin, http):
    shop = await manual_shop(admin)
    pid = shop.project_id
    first = (
        await http.get(f"/api/projects/{pid}/public-info", params={"productId": "book"})
    ).json()
    assert first["providers"][0]["amount"] == 19.99
    await admin.product(
        pid, amount=25, overrides={"manual": {"label": "Cheque", "amount": 24.5, "order": 2}}
    )
    after = (
        await http.get(f"/api/projects/{pid}/public-info", params={"productId": "book"})
    ).json()
    assert after["product"]["amount"] == 25
    assert (
        after["providers"][0]["label"],
        after["providers"][0]["amount"],
        after["providers"][0]["order"],
    ) == ("Cheque", 24.5, 2)
    yen = await admin.product(pid, "yen-book", amount=500, currency="JPY")
    assert yen["amount"] == 500
    bad = await admin.http.put(
        f"/api/manage/projects/{pid}/products/x",
        json={"name": "x", "kind": "payment", "amount": 1.001, "currency": "EUR"},
    )
    assert (bad.status_code, bad.json()["error"]["code"]) == (400, "invalid_amount")
    bad = await admin.http.put(
        f"/api/manage/projects/{pid}/products/x",
        json={"name": "x", "kind": "subscription", "amount": 1, "currency": "EUR"},
    )
    assert bad.json()["error"]["field"] == "interval"
    bad = await admin.http.put(
        f"/api/manage/projects/{pid}/products/x",
        json={"name": "x", "kind": "payment", "amount": 1, "currency": "XYZ"},
    )
    assert bad.json()["error"]["code"] == "invalid_currency"
    deleted = await admin.ok("DELETE", f"/api/manage/projects/{pid}/products/yen-book")
    assert deleted["deleted"] is True
    assert (
        await http.get(f"/api/projects/{pid}/public-info", params={"productId": "yen-book"})
    ).status_code == 404


async def test_provider_secrets_are_write_only_and_sealed_at_rest(node, admin):
    pid = await admin.project()
    secret = "sk_test_" + "S" * 24 + "WXYZ"
    view = await admin.provider(
        pid,
        "manual",
        {
            "enabled": True,
            "label": "By post",
            "order": 3,
            "live": {"mailingAddress": MAILING_ADDRESS},
        },
    )
    assert view["live"]["mailingAddress"] == MAILING_ADDRESS
    unknown = await admin.http.put(
        f"/api/manage/projects/{pid}/providers/manual",
        json={"enabled": True, "live": {"secretKey": secret}},
    )
    assert (unknown.status_code, unknown.json()["error"]["field"]) == (400, "live.secretKey")
    missing = await admin.http.put(
        f"/api/manage/projects/{pid}/providers/venmo", json={"enabled": True}
    )
    assert (missing.status_code, missing.json()["error"]["code"]) == (404, "unknown_provider")
    bad = await admin.http.put(
        f"/api/manage/projects/{pid}/providers/manual", json={"enabled": "yes"}
    )
    assert bad.json()["error"]["field"] == "enabled"
    bad = await admin.http.put(
        f"/api/manage/projects/{pid}/providers/manual",
        json={"enabled": True, "live": {"mailingAddress": {"name": "x"}}},
    )
    assert bad.json()["error"]["field"].startswith("live.mailingAddress")
    project = await admin.ok("GET", f"/api/manage/projects/{pid}")
    assert project["providers"][0]["label"] == "By post"


async def test_keys_are_shown_once_listed_by_id_and_revoked_at_once(node, admin, http):
    shop = await manual_shop(admin)
    pid = shop.project_id
    created = await admin.ok(
        "POST", f"/api/manage/projects/{pid}/keys", {"mode": "live", "name": "server"}, 201
    )
    key = created["key"]
    assert key.startswith("cmk_live_") and len(key) == 41 and created["last4"] == key[-4:]
    listed = await admin.ok("GET", f"/api/manage/projects/{pid}/keys")
    assert created["keyId"] in [k["keyId"] for k in listed["items"]]
    assert key not in json.dumps(listed)
    # stored only as its hash
    stored = await node.ctx.store.scan(b"", db="records")
    for _, raw in stored + await node.ctx.store.scan(b"", db="apikeys"):
        assert key.encode() not in raw
    path = f"/api/projects/{pid}/transactions"
    assert (await http.get(path, headers=bearer(key))).status_code == 200
    await admin.ok("DELETE", f"/api/manage/projects/{pid}/keys/{created['keyId']}")
    assert (await http.get(path, headers=bearer(key))).status_code == 401
    bad = await admin.http.post(f"/api/manage/projects/{pid}/keys", json={"mode": "prod"})
    assert bad.json()["error"]["field"] == "mode"


async def test_a_key_used_while_its_revocation_commits_stops_with_it(node, admin, http):
    import threading

    import trio

    from edge.domain import ids

    shop = await manual_shop(admin)
    pid = shop.project_id
    created = await admin.ok("POST", f"/api/manage/projects/{pid}/keys", {"mode": "live"}, 201)
    path = f"/api/projects/{pid}/transactions"
    assert (await http.get(path, headers=bearer(created["key"]))).status_code == 200
    digest = ids.hash_api_key(created["key"])
    committing, written = trio.Event(), threading.Event()

    def slow_disk(group):  # type: ignore[no-untyped-def]
        """The revocation's commit is held (a disk whose fsync has not returned) until the key
        was used meanwhile; every other commit goes through."""
        if any(op == ("apikeys", digest, None) for ticket in group for op in ticket.ops):
            trio.from_thread.run_sync(committing.set)
            written.wait(10)

    with node.ctx.writer.inject(slow_disk):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(
                admin.ok, "DELETE", f"/api/manage/projects/{pid}/keys/{created['keyId']}"
            )
            try:
                with trio.fail_after(bound(10)):
                    await committing.wait()  # the revocation is committing: the key is stored
                during = await http.get(path, headers=bearer(created["key"]))
            finally:
                written.set()
            assert during.status_code == 200
    after = await http.get(path, headers=bearer(created["key"]))
    assert after.status_code == 401


async def test_the_operator_lists_every_project_page_by_page(admin, http):
    made = sorted([await admin.project(name=f"Shop {n}") for n in range(5)])
    first = await admin.ok("GET", "/api/manage/projects?limit=2")
    assert [p["id"] for p in first["items"]] == made[:2] and first["next"] == made[1]
    assert first["items"][0]["name"].startswith("Shop ") and "keys" in first["items"][0]
    rest = await admin.ok("GET", f"/api/manage/projects?after={first['next']}&limit=100")
    assert [p["id"] for p in rest["items"]] == made[2:] and rest["next"] is None
    for query, field in [("limit=0", "limit"), ("limit=101", "limit"), ("after=nope", "after")]:
        refused = await admin.http.get(f"/api/manage/projects?{query}")
        assert (refused.status_code, refused.json()["error"]["field"]) == (400, field), query
    shop = await manual_shop(admin)
    as_merchant = await http.get("/api/manage/projects", headers=bearer(shop.live_key))
    assert as_merchant.status_code == 403  # a project key sees its own project, never the list


async def test_a_credential_is_checked_by_its_shape_and_a_secret_never_lands_in_a_public_field(
    node, admin, http
):
    pid = await admin.project()
    await admin.product(pid)
    stripe = {
        "secretKey": "sk_test_0123456789abcdefghijklmnop",
        "publishableKey": "pk_test_0123456789abcdefghijklmnop",
        "webhookSecret": "whsec_0123456789abcdefghijklmnop",
    }
    await admin.provider(pid, "stripe", {"enabled": True, "test": stripe})
    path = f"/api/manage/projects/{pid}/providers/stripe"
    for mode, given, field, words in [
        ("test", {"publishableKey": "sk_test_SECRETSECRET0123"}, "publishableKey", "secretKey"),
        ("test", {"publishableKey": "rk_test_SECRETSECRET0123"}, "publishableKey", "secretKey"),
        ("test", {"publishableKey": "whsec_SECRETSECRET0123"}, "publishableKey", "webhookSecret"),
        ("test", {"secretKey": "pk_test_0123456789abcdef"}, "secretKey", "publishableKey"),
        ("test", {"webhookSecret": "sk_test_0123456789abcdef"}, "webhookSecret", "secretKey"),
        ("live", {"secretKey": "sk_test_0123456789abcdef"}, "secretKey", "live credentials"),
        ("test", {"publishableKey": "mykey"}, "publishableKey", "must be"),
    ]:
        refused = await admin.http.put(path, json={"enabled": True, mode: given})
        error = refused.json()["error"]
        assert (refused.status_code, error["code"]) == (400, "invalid_credential"), given
        assert error["field"] == f"{mode}.{field}" and words in error["message"], error
    # nothing changed: public-info still serves the publishable key, never a secret
    info = (await http.get(f"/api/projects/{pid}/public-info?mode=test")).json()
    assert info["providers"][0]["publishableKey"] == stripe["publishableKey"]
    assert "SECRET" not in str(await admin.ok("GET", f"/api/manage/projects/{pid}"))

    paddle = f"/api/manage/projects/{pid}/providers/paddle"
    for given, field in [
        ({"clientToken": "pdl_sdbx_apikey_01gtgztp8f4kek3yd4g1wrksa3_SECRET"}, "clientToken"),
        ({"apiKey": "test_7d279f61a3499fed520f7cd8c08"}, "apiKey"),
        ({"apiKey": "pdl_live_apikey_01gtgztp8f4kek3yd4g1wrksa3_SECRET"}, "apiKey"),
    ]:
        refused = await admin.http.put(paddle, json={"enabled": True, "test": given})
        assert refused.status_code == 400 and refused.json()["error"]["field"] == f"test.{field}"
    for provider, given, field in [
        ("paypal", {"clientId": "sk_live_0123456789abcdefSECRET"}, "clientId"),
        ("btcpay", {"storeId": "whsec_0123456789abcdefSECRET"}, "storeId"),
    ]:
        refused = await admin.http.put(
            f"/api/manage/projects/{pid}/providers/{provider}",
            json={"enabled": True, "live": given},
        )
        assert refused.status_code == 400 and refused.json()["error"]["field"] == f"live.{field}"
