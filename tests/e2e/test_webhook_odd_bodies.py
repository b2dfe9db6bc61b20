"""Correctly signed bodies that no adapter can store answer 400 malformed_payload, are kept as
refused, and change nothing; their neighbours are stored as usual (CONTRACT 8)."""

from __future__ import annotations

import json

import pytest
from support.client import bearer, post_checkout
from support.stripe_events import event_body, signed, stripe_object
from support.stripe_shop import stripe_shop

TX = "tx_01JD0000000000000000000009"


def session(**changes: object) -> dict:
    return stripe_object("checkout_session", client_reference_id=TX, **changes)


def odd_bodies() -> dict[str, bytes]:
    deep: object = {}
    for _ in range(100_000):
        deep = {"a": deep}
    good = json.loads(event_body("evt_odd_base", "checkout.session.completed", session()))
    created = {**good, "id": "evt_odd_created", "created": 10**20}
    return {
        "huge amount": event_body(
            "evt_odd_amount", "checkout.session.completed", session(amount_total=2**70)
        ),
        "year 10**20": json.dumps(created).encode(),
        "deep nesting": b'{"id":"evt_odd_deep","object":"event","data":'
        + b'{"a":' * 100_000
        + b"{}"
        + b"}" * 100_000
        + b"}",
        "surrogate id": event_body("evt_\ud800", "checkout.session.completed", session()),
        "surrogate metadata": event_body(
            "evt_odd_meta", "checkout.session.completed", session(metadata={"k": "\ud800"})
        ),
    }


@pytest.mark.parametrize("name", list(odd_bodies()))
async def test_a_signed_odd_body_is_malformed_not_a_fault(node, admin, http, sim, name):
    shop = await stripe_shop(admin, sim)
    body = odd_bodies()[name]
    response = await http.post(
        f"/webhook/stripe/{shop.project_id}",
        content=body,
        headers=signed(body, shop.webhook_secret),
    )
    assert response.status_code == 400, response.text
    assert response.json()["error"]["code"] == "malformed_payload"
    deliveries = await admin.ok("GET", f"/api/manage/projects/{shop.project_id}/deliveries")
    assert [d["code"] for d in deliveries["items"]] == ["malformed_payload"]
    normal = event_body("evt_odd_neighbour", "checkout.session.completed", session())
    after = await http.post(
        f"/webhook/stripe/{shop.project_id}",
        content=normal,
        headers=signed(normal, shop.webhook_secret),
    )
    assert after.status_code == 200


@pytest.mark.parametrize("stated", ["1999", 19.99, True, "1"])
async def test_a_paid_amount_stated_in_another_type_is_never_taken_for_a_match(
    node, admin, http, sim, stated
):
    """Stripe states money in whole minor units: a signed success that states its amount in
    another type is an amount the node cannot read, held for the merchant as a mismatch,
    never a payment that skipped the amount check (CONTRACT 4.3)."""
    shop = await stripe_shop(admin, sim)
    checkout = (await post_checkout(http, "stripe", shop, "book")).json()
    obj = stripe_object(
        "checkout_session",
        client_reference_id=checkout["txId"],
        id=checkout["url"].rsplit("/", 1)[-1],
        amount_total=stated,
        currency="eur",
        payment_status="paid",
        metadata={"txId": checkout["txId"]},
    )
    body = event_body("evt_mistyped", "checkout.session.completed", obj)
    answer = await http.post(
        f"/webhook/stripe/{shop.project_id}",
        content=body,
        headers=signed(body, shop.webhook_secret),
    )
    assert answer.status_code == 200, answer.text
    tx = (
        await http.get(
            f"/api/projects/{shop.project_id}/transactions/{checkout['txId']}",
            headers=bearer(shop.test_key),
        )
    ).json()
    assert (tx["status"], tx["needsAttention"]) == ("pending", True)
    assert tx["attention"][0]["code"] == "amount_mismatch"
