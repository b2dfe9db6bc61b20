"""Requests the schemathesis and state-machine runs found answered 500, each kept as a test."""

from __future__ import annotations

from support.client import manual_shop
from support.stripe_shop import stripe_shop


async def test_a_tier_that_is_not_a_string_is_refused(admin, envelope):
    body = {"name": "Shop", "successUrl": "https://a.example/", "cancelUrl": "https://a.example/"}
    answer = await admin.http.post("/api/manage/projects", json={**body, "tier": {"x": 1}})
    assert envelope(answer, 400, "invalid_request")["field"] == "tier"
    project_id = await admin.project()
    answer = await admin.http.patch(f"/api/manage/projects/{project_id}", json={"tier": [1]})
    assert envelope(answer, 400, "invalid_request")["field"] == "tier"


async def test_event_types_that_are_not_strings_are_refused(admin, envelope):
    project_id = await admin.project()
    base = f"/api/manage/projects/{project_id}/endpoints"
    body = {"url": "http://localhost:9/hooks", "types": [{"a": 1}]}
    assert envelope(await admin.http.post(base, json=body), 400, "invalid_request")
    created = await admin.ok("POST", base, {"url": "http://localhost:9/hooks"}, 201)
    answer = await admin.http.patch(f"{base}/{created['endpointId']}", json={"types": [[1]]})
    assert envelope(answer, 400, "invalid_request")["field"] == "types"


async def test_an_endpoint_address_that_is_no_url_is_refused(admin, envelope):
    project_id = await admin.project()
    base = f"/api/manage/projects/{project_id}/endpoints"
    for url in ("http://[", "https://a.example:port/"):
        answer = await admin.http.post(base, json={"url": url})
        assert envelope(answer, 400, "url_not_allowed")["field"] == "url", url


async def test_replay_takes_as_many_event_ids_as_a_json_body_holds(admin, envelope):
    """eventIds was documented up to 1,000 while 1,000 ids overflow the 16 KiB body (413)."""
    project_id = await admin.project()
    base = f"/api/manage/projects/{project_id}/endpoints"
    created = await admin.ok("POST", base, {"url": "http://localhost:9/hooks"}, 201)
    replay = f"{base}/{created['endpointId']}/replay"
    ids = [f"evt_01JD7K2Q9XMD4ABCDEFGHJ{n:04d}" for n in range(400)]
    assert (await admin.http.post(replay, json={"eventIds": ids})).status_code == 202
    answer = await admin.http.post(replay, json={"eventIds": [*ids, ids[0][:-1] + "Z"]})
    assert envelope(answer, 400, "invalid_request")["field"] == "eventIds"


async def test_trigger_refuses_unknown_fields_like_every_other_body(admin, envelope):
    body = {"provider": "stripe", "type": "payment.succeeded", "txId": "tx_x", "extra": 1}
    answer = await admin.http.post("/api/manage/trigger", json=body)
    assert envelope(answer, 400, "unknown_field")["field"] == "extra"


async def test_an_integer_written_with_a_point_zero_is_an_integer(admin, http):
    project_id = (await manual_shop(admin)).project_id
    answer = await http.post(
        f"/api/checkout/manual/{project_id}", json={"productId": "book", "quantity": 2.0}
    )
    assert answer.status_code == 201, answer.text
    assert answer.json()["amount"] == 39.98
    refused = await http.post(
        f"/api/checkout/manual/{project_id}", json={"productId": "book", "quantity": 2.5}
    )
    assert refused.status_code == 400


async def test_a_subscription_bought_many_times_is_a_conflict_not_a_bad_request(
    admin, http, envelope
):
    # found by schemathesis: the body is valid; the product's kind is what refuses it
    monthly = {"product_id": "monthly", "kind": "subscription", "interval": "month"}
    project_id = (await manual_shop(admin, monthly)).project_id
    answer = await http.post(
        f"/api/checkout/manual/{project_id}", json={"productId": "monthly", "quantity": 2}
    )
    assert envelope(answer, 409, "quantity_not_allowed")["field"] == "quantity"


async def test_an_idempotency_key_is_visible_ascii_as_the_reference_says(admin, http, envelope):
    # found by schemathesis (make fuzz): a key with a space was taken although the document
    # says visible ASCII
    project_id = (await manual_shop(admin)).project_id
    path = f"/api/checkout/manual/{project_id}"
    for key in ("two words", "tab\there", "x" * 256):
        refused = await http.post(
            path, json={"productId": "book"}, headers={"Idempotency-Key": key}
        )
        assert envelope(refused, 400, "invalid_request")["field"] == "Idempotency-Key", key
    taken = await http.post(path, json={"productId": "book"}, headers={"Idempotency-Key": "a-1_~!"})
    assert taken.status_code == 201


async def test_a_patch_that_names_a_field_gives_it_a_value(admin, envelope):
    # found by schemathesis (make fuzz): {"name": null} was taken as "no change"
    project_id = await admin.project()
    for field in ("name", "successUrl", "cancelUrl"):
        refused = await admin.http.patch(f"/api/manage/projects/{project_id}", json={field: None})
        assert envelope(refused, 400, "invalid_request")["field"] == field
    project = await admin.ok("GET", f"/api/manage/projects/{project_id}")
    assert project["name"] == "Shop"


async def test_what_the_document_refuses_the_node_refuses(admin, http, envelope, sim):
    # found by schemathesis' coverage phase: values the API reference calls invalid were taken
    shop = await stripe_shop(admin, sim)
    base = f"/api/manage/projects/{shop.project_id}"
    product = {"name": "A book", "kind": "payment", "amount": 19.99, "currency": "EUR"}
    answer = await admin.http.put(f"{base}/products/book", json={**product, "overrides": False})
    assert envelope(answer, 400, "invalid_request")["field"] == "overrides"
    endpoint = await admin.ok("POST", f"{base}/endpoints", {"url": "http://localhost:9/h"}, 201)
    replay = f"{base}/endpoints/{endpoint['endpointId']}/replay"
    since = "evt_01JD7K2Q9XMD4ABCDEFGHJKMNP"
    answer = await admin.http.post(replay, json={"since": since, "eventIds": None})
    assert envelope(answer, 400, "invalid_request")["field"] == "eventIds"
    answer = await admin.http.post(replay, json={"since": None})
    assert envelope(answer, 400, "invalid_request")["field"] == "since"
    # a provider name that is not one is said first, whatever the body
    answer = await admin.http.put(f"{base}/providers/bitpay", json={})
    assert envelope(answer, 404, "unknown_provider")
    # an event type the provider's simulator cannot send: a conflict, like a provider without one
    tx = await http.post(
        f"/api/checkout/stripe/{shop.project_id}",
        json={"productId": "book", "mode": "test"},
    )
    trigger = {"provider": "stripe", "type": "unmatched", "txId": tx.json()["txId"]}
    answer = await admin.http.post("/api/manage/trigger", json=trigger)
    assert envelope(answer, 409, "not_simulated")["field"] == "type"
