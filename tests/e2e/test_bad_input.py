"""Bad input gets the contract's JSON error and changes nothing in the store."""

from __future__ import annotations

import pytest
from support.client import bearer, manual_shop

MISSING_TX = "tx_01M7YS2H2CXEBWK64PPXXP5WHD"


async def _snapshot(node, project_id: str) -> list:
    return await node.ctx.store.scan(project_id.encode())


@pytest.mark.parametrize(
    ("body", "status", "code", "field"),
    [
        (b"{not json", 400, "invalid_json", None),
        (b"[1, 2]", 400, "invalid_json", None),
        (b'{"productId": 5}', 400, "invalid_request", "productId"),
        (b'{"productId": "Not A Slug"}', 400, "invalid_request", "productId"),
        (b'{"productId": "nope"}', 404, "product_not_found", "productId"),
        (b'{"productId": "book", "quantity": 0}', 400, "invalid_request", "quantity"),
        (b'{"productId": "book", "quantity": 101}', 400, "invalid_request", "quantity"),
        (b'{"productId": "book", "quantity": true}', 400, "invalid_request", "quantity"),
        # short, but an integer of a billion digits once read: refused before it is made
        (b'{"productId": "book", "quantity": 1e999999999}', 400, "invalid_json", None),
        (b'{"productId": "book", "quantity": 1e-999999999}', 400, "invalid_json", None),
        # past what Decimal holds at all: 400 too, never a 500
        (b'{"productId": "book", "quantity": 1e99999999999999999999}', 400, "invalid_json", None),
        (b'{"productId": "book", "metadata": []}', 400, "invalid_request", "metadata"),
        (
            b'{"productId": "book", "metadata": {"customerRef": 42}}',
            400,
            "invalid_request",
            "metadata.customerRef",
        ),
        (
            b'{"productId": "book", "metadata": {"bad key!": "x"}}',
            400,
            "invalid_request",
            "metadata",
        ),
        (b'{"productId": "book", "txId": "tx_lowercase"}', 400, "invalid_request", "txId"),
        (b'{"productId": "book", "mode": "sandbox"}', 400, "invalid_request", "mode"),
        (b'{"productId": "book", "colour": "red"}', 400, "unknown_field", "colour"),
        (
            b'{"productId": "book", "successUrl": "https://evil.example/x"}',
            400,
            "url_not_allowed",
            "successUrl",
        ),
        (
            b'{"productId": "book", "cancelUrl": "http://shop.example/x"}',
            400,
            "url_not_allowed",
            "cancelUrl",
        ),
        # spaces around an address of the shop's own: refused as given, never trimmed
        (
            b'{"productId": "book", "successUrl": " https://shop.example/x"}',
            400,
            "url_not_allowed",
            "successUrl",
        ),
        (
            b'{"productId": "book", "successUrl": "https://shop.example/x\\u00a0"}',
            400,
            "url_not_allowed",
            "successUrl",
        ),
        (
            b'{"productId": "book", "cancelUrl": "\\u2028https://shop.example/x"}',
            400,
            "url_not_allowed",
            "cancelUrl",
        ),
        (b'{"productId": "book", "amount": NaN}', 400, "invalid_json", None),
        (b'{"productId": "book", "quantity": ' + b"9" * 4301 + b"}", 400, "invalid_json", None),
        (b'{"productId": "book", "x": 1.' + b"5" * 100 + b"}", 400, "invalid_json", None),
        (
            b'{"productId": "pro", "metadata": {"customerRef": "\\ud800"}}',
            400,
            "invalid_json",
            None,
        ),
        (
            b'{"productId": "book", "m": ' + b"[" * 8000 + b"]" * 8000 + b"}",
            400,
            "invalid_json",
            None,
        ),
    ],
)
async def test_bad_checkout_bodies(node, admin, http, body, status, code, field):
    shop = await manual_shop(admin)
    before = await _snapshot(node, shop.project_id)
    response = await http.post(
        f"/api/checkout/manual/{shop.project_id}",
        content=body,
        headers={"content-type": "application/json"},
    )
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["code"] == code
    assert error.get("field") == field
    assert await _snapshot(node, shop.project_id) == before


async def test_too_many_metadata_keys(admin, http):
    shop = await manual_shop(admin)
    metadata = {f"k{n}": "v" for n in range(21)}
    response = await http.post(
        f"/api/checkout/manual/{shop.project_id}", json={"productId": "book", "metadata": metadata}
    )
    assert response.status_code == 400 and response.json()["error"]["field"] == "metadata"


async def test_unknown_provider_project_and_ids(admin, http):
    shop = await manual_shop(admin)
    pid = shop.project_id
    response = await http.post(f"/api/checkout/venmo/{pid}", json={"productId": "book"})
    assert (response.status_code, response.json()["error"]["code"]) == (404, "unknown_provider")
    response = await http.post(f"/api/checkout/stripe/{pid}", json={"productId": "book"})
    assert (response.status_code, response.json()["error"]["code"]) == (404, "provider_not_enabled")
    response = await http.post(
        "/api/checkout/manual/prj_0000000000000000", json={"productId": "book"}
    )
    assert (response.status_code, response.json()["error"]["code"]) == (404, "project_not_found")
    response = await http.post("/api/checkout/manual/not-a-project", json={"productId": "book"})
    assert (response.status_code, response.json()["error"]["code"]) == (404, "project_not_found")
    response = await http.get(f"/api/projects/{pid}/public-info", params={"productId": "nope"})
    assert (response.status_code, response.json()["error"]["code"]) == (404, "product_not_found")
    response = await http.get("/api/projects/prj_0000000000000000/public-info")
    assert (response.status_code, response.json()["error"]["code"]) == (404, "project_not_found")


async def test_status_answers_the_same_404_for_unknown_malformed_and_foreign_ids(admin, http):
    shop = await manual_shop(admin)
    other = await manual_shop(admin)
    foreign = (
        await http.post(f"/api/checkout/manual/{other.project_id}", json={"productId": "book"})
    ).json()["txId"]
    answers = set()
    for path in (
        f"/status/{shop.project_id}/{MISSING_TX}",
        f"/status/{shop.project_id}/tx_garbage",
        f"/status/{shop.project_id}/{foreign}",
        f"/status/prj_0000000000000000/{foreign}",
    ):
        response = await http.get(path)
        assert response.status_code == 404
        answers.add((response.json()["error"]["code"], response.json()["error"]["message"]))
    assert len(answers) == 1 and next(iter(answers))[0] == "not_found"


async def test_client_proposed_tx_id_must_be_new(admin, http):
    shop = await manual_shop(admin)
    body = {"productId": "book", "txId": MISSING_TX}
    assert (
        await http.post(f"/api/checkout/manual/{shop.project_id}", json=body)
    ).status_code == 201
    again = await http.post(f"/api/checkout/manual/{shop.project_id}", json=body)
    assert (again.status_code, again.json()["error"]["code"]) == (409, "tx_exists")


async def test_mark_paid_refusals_change_nothing(node, admin, http):
    shop = await manual_shop(admin)
    pid = shop.project_id
    tx = (await http.post(f"/api/checkout/manual/{pid}", json={"productId": "book"})).json()["txId"]
    canceled = await http.post(
        f"/api/projects/{pid}/transactions/{tx}/cancel", headers=bearer(shop.live_key)
    )
    assert canceled.json()["status"] == "canceled"
    before = await _snapshot(node, pid)
    response = await http.post(
        f"/api/projects/{pid}/transactions/{tx}/mark-paid", headers=bearer(shop.live_key)
    )
    assert (response.status_code, response.json()["error"]["code"]) == (422, "invalid_transition")
    assert response.json()["error"]["status"] == "canceled"
    response = await http.post(
        f"/api/projects/{pid}/transactions/{MISSING_TX}/mark-paid", headers=bearer(shop.live_key)
    )
    assert (response.status_code, response.json()["error"]["code"]) == (404, "not_found")
    response = await http.post(
        f"/api/projects/{pid}/transactions/tx_bad/mark-paid", headers=bearer(shop.live_key)
    )
    assert response.status_code == 404
    response = await http.post(
        f"/api/projects/{pid}/transactions/{tx}/mark-paid",
        json={"note": 5},
        headers=bearer(shop.live_key),
    )
    assert (response.status_code, response.json()["error"]["field"]) == (400, "note")
    assert await _snapshot(node, pid) == before
    assert (await http.get(f"/status/{pid}/{tx}")).json()["version"] == 2


async def test_merchant_api_authentication(admin, http):
    shop = await manual_shop(admin)
    other = await manual_shop(admin)
    path = f"/api/projects/{shop.project_id}/transactions"
    response = await http.get(path)
    assert (response.status_code, response.json()["error"]["code"]) == (401, "unauthorized")
    response = await http.get(path, headers=bearer("cmk_live_" + "x" * 32))
    assert (response.status_code, response.json()["error"]["code"]) == (401, "unauthorized")
    response = await http.get(path, headers={"Authorization": "Basic abc"})
    assert response.status_code == 401
    response = await http.get(path, headers=bearer(other.live_key))
    assert (response.status_code, response.json()["error"]["code"]) == (403, "forbidden")
    response = await http.get(path, params={"limit": "500"}, headers=bearer(shop.live_key))
    assert (response.status_code, response.json()["error"]["field"]) == (400, "limit")
    response = await http.get(path, params={"status": "paid"}, headers=bearer(shop.live_key))
    assert (response.status_code, response.json()["error"]["field"]) == (400, "status")
    # a wrong key on the anonymous status endpoint is refused rather than silently ignored
    response = await http.get(
        f"/status/{shop.project_id}/{MISSING_TX}", headers=bearer("cmk_live_" + "y" * 32)
    )
    assert response.status_code == 401


@pytest.mark.parametrize(
    "query",
    ["wait=" + "9" * 4301 + "&version=1", "wait=1&version=" + "9" * 4301, "wait=-1", "wait=1e3"],
)
async def test_status_numbers_are_bounded_before_they_are_parsed(admin, http, query):
    shop = await manual_shop(admin)
    response = await http.get(f"/status/{shop.project_id}/{MISSING_TX}?{query}")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_request"


async def test_listing_limits_are_bounded_before_they_are_parsed(admin, http):
    shop = await manual_shop(admin)
    for path in ("transactions", "events"):
        response = await http.get(
            f"/api/projects/{shop.project_id}/{path}?limit={'9' * 4301}",
            headers=bearer(shop.live_key),
        )
        assert response.status_code == 400, path
        assert response.json()["error"]["field"] == "limit"
