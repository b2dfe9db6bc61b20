"""The whole pay-by-mail path on a real node, as a merchant and a buyer would use it."""

from __future__ import annotations

from support.client import MAILING_ADDRESS, bearer, manual_shop


async def test_public_info_lists_manual_with_address_and_price(admin, http):
    shop = await manual_shop(admin)
    response = await http.get(
        f"/api/projects/{shop.project_id}/public-info", params={"productId": "book"}
    )
    assert response.status_code == 200
    assert response.headers["cache-control"] == "public, max-age=60"
    assert response.headers["access-control-allow-origin"] == "*"
    assert response.headers["etag"].startswith('"')
    body = response.json()
    assert body["projectId"] == shop.project_id
    assert body["product"] == {
        "id": "book",
        "name": "A book",
        "kind": "payment",
        "interval": None,
        "amount": 19.99,
        "currency": "EUR",
    }
    [entry] = body["providers"]
    assert entry["provider"] == "manual" and entry["kind"] == "manual"
    assert entry["label"] == "Pay by mail"
    assert entry["icon"].endswith("/static/icons/mail.svg")
    assert entry["mailingAddress"] == MAILING_ADDRESS
    assert (entry["amount"], entry["currency"]) == (19.99, "EUR")
    icon = await http.get(entry["icon"])
    assert icon.status_code == 200 and b"<svg" in icon.content

    again = await http.get(
        f"/api/projects/{shop.project_id}/public-info",
        params={"productId": "book"},
        headers={"If-None-Match": response.headers["etag"]},
    )
    assert again.status_code == 304


async def test_checkout_status_mark_paid_and_feed(admin, http):
    shop = await manual_shop(admin)
    pid = shop.project_id
    created = await http.post(
        f"/api/checkout/manual/{pid}",
        json={"productId": "book", "metadata": {"customerRef": "user-42"}},
    )
    assert created.status_code == 201, created.text
    checkout = created.json()
    tx_id = checkout["txId"]
    assert tx_id.startswith("tx_") and len(tx_id) == 29
    assert checkout["type"] == "reference" and checkout["provider"] == "manual"
    assert checkout["reference"].startswith("CM-") and len(checkout["reference"]) == 14
    assert checkout["mailingAddress"] == MAILING_ADDRESS
    assert (checkout["amount"], checkout["currency"], checkout["isTest"]) == (19.99, "EUR", False)

    status = (await http.get(f"/status/{pid}/{tx_id}")).json()
    assert status["status"] == "pending" and status["version"] == 1
    assert "customerRef" not in status and "metadata" not in status

    listed = await http.get(f"/api/projects/{pid}/transactions", headers=bearer(shop.live_key))
    assert listed.status_code == 200
    assert [(t["id"], t["customerRef"]) for t in listed.json()["items"]] == [(tx_id, "user-42")]
    by_reference = await http.get(
        f"/api/projects/{pid}/transactions",
        params={"reference": checkout["reference"].lower().replace("-", " ")},
        headers=bearer(shop.live_key),
    )
    assert [t["id"] for t in by_reference.json()["items"]] == [tx_id]

    paid = await http.post(
        f"/api/projects/{pid}/transactions/{tx_id}/mark-paid", headers=bearer(shop.live_key)
    )
    assert paid.status_code == 200, paid.text
    assert paid.json()["status"] == "succeeded"

    status = (await http.get(f"/status/{pid}/{tx_id}")).json()
    assert (status["status"], status["version"]) == ("succeeded", 2)

    one = (
        await http.get(f"/api/projects/{pid}/transactions/{tx_id}", headers=bearer(shop.live_key))
    ).json()
    assert [e["type"] for e in one["events"]] == ["checkout.created", "manual.marked_paid"]

    feed = (await http.get(f"/api/projects/{pid}/events", headers=bearer(shop.live_key))).json()
    marked = [e for e in feed["items"] if e["type"] == "manual.marked_paid"]
    assert len(marked) == 1
    assert marked[0]["customerRef"] == "user-42" and marked[0]["status"] == "succeeded"
    assert marked[0]["txId"] == tx_id
    after = (
        await http.get(
            f"/api/projects/{pid}/events",
            params={"after": marked[0]["id"]},
            headers=bearer(shop.live_key),
        )
    ).json()
    assert after["items"] == []


async def test_test_key_sees_only_test_transactions(admin, http):
    shop = await manual_shop(admin)
    pid = shop.project_id
    live = (await http.post(f"/api/checkout/manual/{pid}", json={"productId": "book"})).json()
    test = (
        await http.post(
            f"/api/checkout/manual/{pid}", json={"productId": "book"}, headers=bearer(shop.test_key)
        )
    ).json()
    assert test["isTest"] is True and live["isTest"] is False
    seen = (
        await http.get(f"/api/projects/{pid}/transactions", headers=bearer(shop.test_key))
    ).json()
    assert [t["id"] for t in seen["items"]] == [test["txId"]]
    hidden = await http.post(
        f"/api/projects/{pid}/transactions/{live['txId']}/mark-paid", headers=bearer(shop.test_key)
    )
    assert hidden.status_code == 404
